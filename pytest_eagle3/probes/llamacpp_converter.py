"""Probe llama.cpp's HF -> GGUF converter on one draft: convert_hf_to_gguf.py DRAFT --target-model-dir TARGET, read back.

llama.cpp serves a GGUF, so its converter is the EAGLE-3 load path that runs on a CPU: it decides whether the
draft is an EAGLE-3 draft at all, which aux ids and d2t go into the file, and which tensors are kept. Runs in an
interpreter with torch and numpy; the converter and its own gguf-py come from a llama.cpp tree
(``EAGLE3_LLAMACPP_DIR``: an sdist's ``vendor/llama.cpp``; PyPI's gguf has no EAGLE-3 entries). The vocabulary
step is skipped (the probe's targets ship no tokenizer; a note says so). Writes the ``harness.SCHEMA`` result:
``stage`` "config" (architecture lookup, EAGLE-3 detection), "load" (tensor conversion), "share" (the GGUF as
written is not an EAGLE-3 draft); ``parameters`` are the GGUF tensors with the checkpoint names the converter
wrote into each; ``aux_layer_ids`` the ``eagle3.target_layers`` written (layer inputs; ``captured_inputs_of`` those
below the target's layer count); ``draft_to_target`` the absolute ids written as ``d2t``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_eagle3.words import plural

if __package__:
    from pytest_eagle3.probes.harness import empty_result, error_text, main
else:  # run by path in the converter's interpreter: the harness next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from harness import empty_result, error_text, main  # type: ignore[import-not-found,no-redef]

ENGINE = "llamacpp"
#: What a comparison with the plan may read from this probe (``probes.differential``): the refusal, the aux layers
#: written, layers and norms; the converter builds no engine parameters to compare names and shapes with.
REPORTS_EVERY_FACT = False
#: The llama.cpp tree (convert_hf_to_gguf.py, conversion/, gguf-py/).
DIR_VARIABLE = "EAGLE3_LLAMACPP_DIR"
ARCH = "eagle3"
#: The tensors src/models/eagle3.cpp load_arch_tensors creates (some optional); any other fails the load.
_EAGLE3_TENSORS = {"token_embd.weight", "fc.weight", "enc.output_norm.weight", "output_norm.weight", "output.weight",
                   "d2t", "rope_freqs.weight",
                   *(f"blk.0.{n}.weight" for n in ("attn_norm", "attn_norm_2", "attn_q", "attn_k", "attn_v",
                                                   "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up"))}


def tree() -> Path | None:
    """The llama.cpp tree named by ``EAGLE3_LLAMACPP_DIR``, when it holds the converter and gguf-py."""
    folder = os.environ.get(DIR_VARIABLE)
    if not folder or not (Path(folder) / "convert_hf_to_gguf.py").is_file() or not (Path(folder) / "gguf-py").is_dir():
        return None
    return Path(folder)


def _version(folder: Path) -> str | None:
    """The llama-cpp-python release whose sdist holds the tree (its PKG-INFO), else None."""
    info = folder.parent.parent / "PKG-INFO"
    if not info.is_file():
        return None
    version = next((line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
                    if line.startswith("Version:")), None)
    return f"llama-cpp-python {version}" if version else None


def _import_converter(folder: Path) -> Any:
    for path in (str(folder / "gguf-py"), str(folder)):
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module("convert_hf_to_gguf")


def _field(reader: Any, name: str) -> Any:
    found = reader.fields.get(name)
    if found is None:
        return None
    values = [found.parts[i].tolist() for i in found.data]
    flat = [v[0] if isinstance(v, list) and len(v) == 1 else v for v in values]
    return flat if len(flat) != 1 or name.endswith("target_layers") else flat[0]


def probe(draft: str, target: str) -> Any:
    """Convert the draft with llama.cpp's own converter and record what it wrote or refused."""
    result = empty_result(ENGINE)
    folder = tree()
    if folder is None:
        result.update(outcome="probe-error", error=f"{DIR_VARIABLE} names no llama.cpp tree with convert_hf_to_gguf.py")
        return result
    result["version"] = _version(folder)
    converter = _import_converter(folder)
    llama = importlib.import_module("conversion.llama")
    import gguf

    written: dict[str, list[str]] = {}
    original = llama.LlamaModel.modify_tensors

    def recording(self: Any, data: Any, name: str, bid: Any) -> Any:
        for new_name, tensor in original(self, data, name, bid):
            written.setdefault(new_name, []).append(name)
            yield new_name, tensor

    llama.LlamaModel.modify_tensors = recording
    llama.LlamaModel.set_vocab = lambda self: self.gguf_writer.add_tokenizer_model("none")
    result["notes"].append("vocabulary step skipped (set_vocab: tokenizer model 'none'): the target ships no tokenizer")
    config = json.loads((Path(draft) / "config.json").read_text())
    result["draft_class"] = (config.get("architectures") or [None])[0]
    with tempfile.TemporaryDirectory(prefix="eagle3-gguf-") as tmp:
        out = Path(tmp) / "draft.gguf"
        argv = ["convert_hf_to_gguf.py", draft, "--target-model-dir", target, "--outfile", str(out), "--outtype", "f32"]
        saved = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stderr(sys.stdout):
                converter.main()
        except SystemExit as exc:
            result.update(stage="config", error=f"convert_hf_to_gguf.py exited with status {exc.code} "
                                                f"(architecture {result['draft_class']!r} not supported)")
            return result
        except Exception as exc:
            result.update(stage="load" if written or "map tensor" in str(exc) else "config", error=error_text(exc))
            return result
        finally:
            sys.argv = saved
            llama.LlamaModel.modify_tensors = original
        keep = os.environ.get("EAGLE3_LLAMACPP_KEEP")  # a folder to keep each GGUF in (for llama.cpp's own loader)
        if keep:
            import shutil

            shutil.copy(out, Path(keep) / f"{Path(draft).name}.gguf")
        reader = gguf.GGUFReader(str(out))
        _read_back(result, reader, written, draft, target)
    return result


def _read_back(result: dict[str, Any], reader: Any, written: dict[str, list[str]], draft: str, target: str) -> None:
    arch = _field(reader, "general.architecture")
    arch = bytes(arch).decode() if isinstance(arch, list) else arch
    tensors = {t.name: t for t in reader.tensors}
    result["shapes"] = {name: [int(n) for n in reversed(t.shape.tolist())] for name, t in tensors.items()}
    used: set[str] = set()
    for name in tensors:
        sources = written.get(name, ["d2t"] if name == "d2t" else [])
        used.update(sources)
        if sources:
            result["parameters"][name] = {"sources": sources, "equal": True}
    names = _checkpoint_names(Path(draft))
    result["dropped"] = sorted(n for n in names if n not in used and _renamed(n) not in used)
    result["notes"].append(f"general.architecture = {arch}")
    if arch != ARCH:
        result.update(stage="share", error=f"the GGUF's architecture is {arch!r}, not {ARCH!r}: llama-server refuses "
                                           "it as an EAGLE-3 draft ('draft model is not eagle3')")
        return
    ids = _field(reader, f"{ARCH}.target_layers")
    layers = json.loads((Path(target) / "config.json").read_text()).get("num_hidden_layers")
    result["aux_layer_ids"] = ids
    result["captured_inputs_of"] = sorted({i for i in ids if layers is None or i < layers}) if ids else []
    result["fc_input_width"] = result["shapes"].get("fc.weight", [None, None])[1]
    result["fc_applied"] = True
    result["norms"] = {"norm_before_residual": bool(_field(reader, f"{ARCH}.norm_before_residual")),
                       "norm_before_fc": bool(_field(reader, f"{ARCH}.norm_before_fc")),
                       "norm_output": False, "fc_norm": False}
    result["draft_layers"] = _field(reader, f"{ARCH}.block_count")
    if "d2t" in tensors:
        result["draft_to_target"] = [int(v) for v in tensors["d2t"].data.tolist()]
    result["embed_tokens"] = "draft" if "token_embd.weight" in tensors else "target"
    result["lm_head"] = "draft" if "output.weight" in tensors else "target"
    extra = sorted(n for n in tensors if n not in _EAGLE3_TENSORS)
    if extra:  # llama_model_loader::done_getting_tensors counts every tensor of the file
        result.update(stage="load", error=f"the GGUF holds tensors llama_model_eagle3 never creates ({', '.join(extra)}): "
                                          "llama.cpp's loader raises 'wrong number of tensors'")
        return
    heads = _field(reader, f"{ARCH}.attention.head_count")
    width = _field(reader, f"{ARCH}.attention.key_length") or (_field(reader, f"{ARCH}.embedding_length") // heads)
    q_rows = result["shapes"].get("blk.0.attn_q.weight", [None])[0]
    if q_rows is not None and q_rows != width * heads:
        result.update(stage="load", error=f"blk.0.attn_q.weight has {q_rows} rows; llama.cpp's loader expects "
                                          f"head_dim {width} x {heads} heads = {width * heads}: 'wrong shape'")
        return
    vocab, head = _field(reader, f"{ARCH}.vocab_size"), result["shapes"].get("output.weight", [None])[0]
    rows = len(result["draft_to_target"]) if result["draft_to_target"] is not None else vocab
    if head is not None and rows is not None and head != rows:
        result.update(stage="load", error=f"output.weight has {head} rows; llama.cpp's loader expects {rows} (the "
                                          f"{'d2t length' if 'd2t' in tensors else 'vocab, no d2t'}): 'wrong shape'")
        return
    fc_width, target_width = result["fc_input_width"], _field(reader, f"{ARCH}.target_hidden_size")
    if ids and fc_width is not None and target_width and fc_width != len(ids) * target_width:
        result.update(stage="load", error=f"fc.weight takes {fc_width} inputs; llama.cpp's loader expects "
                                          f"{len(ids)} target layers x {target_width} = {len(ids) * target_width}: "
                                          "'wrong shape'")
        return
    if ids is not None and len(ids) != 3:
        result.update(stage="share", error=f"eagle3.target_layers has {plural(len(ids), 'entry')}: llama.cpp's loader raises "
                                           "'EAGLE3 requires exactly 3 entries in extract_layers'")
        return
    result["outcome"] = "loaded"


def _renamed(name: str) -> str:
    """The name the converter's index_tensors gives an EAGLE-3 draft's first layer (midlayer.*, layers.0.*)."""
    if name.startswith("midlayer."):
        return "model.layers.0." + name[len("midlayer."):]
    return "model." + name if name.startswith("layers.0.") else name


def _checkpoint_names(folder: Path) -> list[str]:
    from safetensors import safe_open

    names: list[str] = []
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as handle:
            names.extend(handle.keys())
    return names


if __name__ == "__main__":
    raise SystemExit(main(ENGINE, probe, None, __doc__))
