"""A config key recognises a producer only when no other producer writes it: every key a detection signal or mark
names (``FormatSignal.keys``, ``Mark.keys``) is checked against every producer's released export code, and a key two
producers write (``SHARED_CONFIG_KEYS``) marks neither.

The released code is read from the producer's wheel: installed (``tox -e producers``), or in the wheel cache that
``python -m pytest_eagle3 learn`` fills (``pip download NAME==VER --no-deps -d <cache>/wheels``); a test skips naming
the wheel it lacks. EAGLE, TorchSpec and DeepSpec publish no wheel: their keys are checked against the others' code.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import zipfile
from pathlib import Path

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.knowledge.learned import knowledge_dir
from pytest_eagle3.producers.names import ANGELSLIM, MODELOPT, SPECFORGE, SPECULATORS
from pytest_eagle3.producers.records import RECORDS, SHARED_CONFIG_KEYS
from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint

#: The producer releases the records were read from that ship a wheel (tox.ini's ``producers`` env pins the same).
WHEELS = {SPECULATORS: ("speculators", "0.9.0"), SPECFORGE: ("specforge", "0.2.0"),
          MODELOPT: ("nvidia-modelopt", "0.47.0"), ANGELSLIM: ("angelslim", "0.5.0")}
#: The suffixes of a wheel's files that can write a config key (code, and the config templates it ships).
TEXT_SUFFIXES = (".py", ".json", ".yaml", ".yml")


def _recognising() -> list[tuple[str, str, tuple[str, ...], str]]:
    """(producer, key, the producers the signal names as sharing it, the signal's words) for every key a signal or
    mark of a record tests."""
    found = []
    for record in RECORDS.values():
        for signal in record.signals:
            found += [(record.name, key, signal.shared_with, signal.evidence) for key in signal.keys]
        for mark in record.marks:
            found += [(record.name, key, (), mark.evidence) for key in mark.keys]
    return found


RECOGNISING = _recognising()


def _wheel_text(producer: str) -> str:
    """Every text file of ``producer``'s released wheel, joined; skips naming the wheel when it is not here."""
    dist, version = WHEELS[producer]
    try:
        installed = importlib.metadata.version(dist) == version
    except importlib.metadata.PackageNotFoundError:
        installed = False
    if installed:
        files = importlib.metadata.files(dist) or []
        return "\n".join(Path(str(f.locate())).read_text(encoding="utf-8", errors="replace")
                         for f in files if str(f).endswith(TEXT_SUFFIXES) and Path(str(f.locate())).is_file())
    cache = knowledge_dir().parent / "wheels"
    wheels = sorted(cache.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        pytest.skip(f"{dist}=={version} is neither installed nor in {cache}: pip download {dist}=={version} --no-deps "
                    f"-d {cache} (or tox -e producers)")
    with zipfile.ZipFile(wheels[0]) as wheel:
        return "\n".join(wheel.read(n).decode("utf-8", errors="replace") for n in wheel.namelist()
                         if n.endswith(TEXT_SUFFIXES))


def _writes(text: str, key: str) -> bool:
    """The key appears as a string literal (a dict key, a getattr / setattr name) in the code."""
    return re.search(rf"[\"']{re.escape(key)}[\"']", text) is not None


def test_the_records_name_the_keys_their_signals_test() -> None:
    keys = {key for _, key, _, _ in RECOGNISING}
    assert {"speculators_model_type", "speculators_config", "transformer_layer_config", "modal_type",
            "_torchspec_version", "use_last_layernorm"} <= keys, keys


def test_no_key_several_producers_write_recognises_one() -> None:
    """target_model_type is written by AngelSlim's and SpecForge's multimodal draft configs: no signal names it."""
    used = [(producer, key, words) for producer, key, _, words in RECOGNISING if key in SHARED_CONFIG_KEYS]
    assert not used, used
    for key, (producers, source) in SHARED_CONFIG_KEYS.items():
        assert len(producers) >= 2 and all(p in RECORDS for p in producers) and source, key


def test_no_key_recognises_two_producers() -> None:
    owners: dict[str, set[str]] = {}
    for producer, key, shared, _ in RECOGNISING:
        owners.setdefault(key, set()).update({producer, *shared})
    claimed = {key: sorted(who) for key, who in owners.items()
               if len({p for p, k, _, _ in RECOGNISING if k == key}) > 1}
    assert not claimed, claimed


@pytest.mark.parametrize("writer", sorted(WHEELS))
def test_no_other_producers_export_code_writes_a_recognising_key(writer: str) -> None:
    """For every key that recognises producer P (a signal not shared with ``writer``), ``writer``'s released code
    never names it."""
    text = _wheel_text(writer)
    written = sorted({(producer, key) for producer, key, shared, _ in RECOGNISING
                      if producer != writer and writer not in shared and _writes(text, key)})
    assert not written, f"{writer}'s released code writes keys that recognise another producer: {written}"


@pytest.mark.parametrize("producer", sorted(WHEELS))
def test_each_producers_own_recognising_keys_are_in_its_code(producer: str) -> None:
    """The check above can fail: the keys that recognise a producer with a wheel are in that wheel's code."""
    own = sorted({key for p, key, _, _ in RECOGNISING if p == producer})
    if not own:
        pytest.skip(f"no signal of {producer} tests a config key")
    text = _wheel_text(producer)
    assert all(_writes(text, key) for key in own), [key for key in own if not _writes(text, key)]


def test_a_shared_key_is_in_the_code_of_a_producer_that_writes_it() -> None:
    assert _writes(_wheel_text(ANGELSLIM), "target_model_type")


def _draft(tmp_path: Path, producer: str, **config: object) -> Checkpoint:
    draft = write_checkpoint(SynthSpec(producer=producer), tmp_path / producer)
    path = draft / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | config, indent=2), encoding="utf-8")
    return Checkpoint.open(draft)


def test_a_specforge_multimodal_draft_is_read_as_specforge(tmp_path: Path) -> None:
    """SpecForge's qwen3-vl draft config writes target_model_type: the checkpoint is SpecForge's (its midlayer.*
    keys under LlamaForCausalLMEagle3), not AngelSlim's, so SpecForge's output-of convention reads its ids."""
    ckpt = _draft(tmp_path, SPECFORGE, target_model_type="qwen3_vl")
    assert ckpt.format.producer == SPECFORGE, ckpt.format
    assert ckpt.format.label == "specforge (SGLang export, no embed_tokens)"
    assert not any("target_model_type" in e for e in ckpt.format.evidence), ckpt.format.evidence


def test_an_angelslim_draft_is_still_read_as_angelslim(tmp_path: Path) -> None:
    ckpt = _draft(tmp_path, ANGELSLIM)
    assert ckpt.format.producer == ANGELSLIM, ckpt.format
    assert ckpt.format.evidence == ("architectures Eagle3LlamaForCausalLM, or modal_type in config",)
