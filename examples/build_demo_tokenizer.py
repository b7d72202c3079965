"""Write the demo target's GGUF tokenizer, deterministically: ``python examples/build_demo_tokenizer.py``.

The demo language is token ids (``examples/build_demo_pair.py``): the target ships no tokenizer, and every
prompt the plugin sends is a list of ids. llama.cpp serves a GGUF, and its converter (``convert_hf_to_gguf.py``)
writes a vocabulary only from a tokenizer it recognises; a Llama-style BPE ``tokenizer.json`` with byte fallback
and a ``Sequence`` decoder is one (gguf-py ``vocab.py`` ``LlamaHfVocab``, read by ``conversion/base.py``
``_set_vocab_llama_hf``; b11312). This writes one with exactly the target's 1024 ids: ``<unk>`` 0, ``<s>`` 1,
``</s>`` 2 (the language's content ids are 8 and up, so the target never emits them) and ``▁t3`` .. ``▁t1023``.
No merges: text is not tokenised into these pieces, ids are the interface.

It goes into ``demo-target/gguf-tokenizer/``, not beside the weights: a tokenizer there would change the
plugin's built-in prompts (texts with a tokenizer, token ids without) and with them every documented verdict.
The llama.cpp live fixture stages the target with this folder's files for the converter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "demo-target" / "gguf-tokenizer"
VOCAB = 1024
SPECIALS = ("<unk>", "<s>", "</s>")
SPACE = "\u2581"


def tokenizer_json(vocab: int = VOCAB) -> dict[str, Any]:
    """A tokenizers-format Llama BPE tokenizer over ``vocab`` ids (specials first, then ``▁tN``)."""
    pieces = {name: i for i, name in enumerate(SPECIALS)}
    pieces.update({f"{SPACE}t{i}": i for i in range(len(SPECIALS), vocab)})
    added = [{"id": i, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, name in enumerate(SPECIALS)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE}, {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": pieces, "merges": []},
    }


def tokenizer_config() -> dict[str, Any]:
    """No BOS / EOS added to a prompt: the requests are the prompts' ids as they are."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
            "unk_token": "<unk>", "add_bos_token": False, "add_eos_token": False, "model_max_length": 256,
            "clean_up_tokenization_spaces": False}


def write(out: Path = OUT) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name, data in (("tokenizer.json", tokenizer_json()), ("tokenizer_config.json", tokenizer_config())):
        (out / name).write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                                encoding="utf-8")
    return out


if __name__ == "__main__":
    print(write())
