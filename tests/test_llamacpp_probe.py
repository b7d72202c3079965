"""llama.cpp's real HF -> GGUF converter (convert_hf_to_gguf.py with its own gguf-py) on the probe cases and the
examples, read back with its GGUFReader, against the llamacpp plan.

Runs where a llama.cpp tree is named by ``EAGLE3_LLAMACPP_DIR`` (an sdist's ``vendor/llama.cpp``; the tox env
llamacpp11312 brings llama-cpp-python 0.3.36's); skips naming it otherwise. ``EAGLE3_LLAMACPP_RECORD=PATH``
writes the results' summary there (``pytest_eagle3/probes/llamacpp_results.json`` is one such record).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import REFUSED, LoadPlan, load_plan
from pytest_eagle3.knowledge.llamacpp_builds import vendored_build
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.probes.llamacpp_converter import DIR_VARIABLE, tree
from pytest_eagle3.probes.run import run_probes

pytestmark = pytest.mark.engine
ENGINE = "llamacpp"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
Results = dict[str, dict[str, Any]]


def _variant(source: Path, out: Path, config: Callable[[dict[str, Any]], None]) -> Path:
    import shutil

    shutil.copytree(source, out)
    data = json.loads((source / "config.json").read_text())
    config(data)
    (out / "config.json").write_text(json.dumps(data))
    return out


def _nested_136(config: dict[str, Any]) -> None:
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 3, 6]


def _top_136(config: dict[str, Any]) -> None:
    config["eagle_aux_hidden_state_layer_ids"] = [1, 3, 6]


def _no_draft_vocab(config: dict[str, Any]) -> None:
    config.pop("draft_vocab_size")


@pytest.fixture(scope="module")
def converted(probe_cases: tuple[Path, dict[str, Path]], tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, dict[str, Path], Results]:
    if tree() is None:
        pytest.skip(f"no llama.cpp converter tree: set {DIR_VARIABLE} to an sdist's vendor/llama.cpp "
                    "or run tox -e llamacpp11312")
    target, shared = probe_cases
    root = tmp_path_factory.mktemp("llamacpp-variants")
    sglang = EXAMPLES / "demo-draft-sglang"
    drafts = {**shared, "demo-draft-sglang": sglang, "demo-draft": EXAMPLES / "demo-draft",
              "nested-ids-136": _variant(sglang, root / "nested", _nested_136),
              "top-level-ids-136": _variant(sglang, root / "top", _top_136),
              "no-draft-vocab-size": _variant(sglang, root / "no-dvs", _no_draft_vocab),
              "speculators-ids-136": _variant(EXAMPLES / "demo-draft", root / "spec-136", _top_136)}
    demo_target = EXAMPLES / "demo-target"
    pairs = [(d, demo_target if d.parent in (EXAMPLES, root) else target) for d in drafts.values()]
    results = dict(zip(drafts, run_probes(ENGINE, sys.executable, pairs, timeout=120)))
    record = os.environ.get("EAGLE3_LLAMACPP_RECORD")
    if record:  # one entry per converter tree, beside the others already recorded
        keep = ("outcome", "stage", "error", "aux_layer_ids", "captured_inputs_of", "dropped", "embed_tokens", "lm_head")
        old = json.loads(Path(record).read_text()) if Path(record).is_file() else {}
        version = str(next(iter(results.values()))["version"])
        old[f"{version} (b{_build(results)})"] = {n: {k: r[k] for k in keep} for n, r in results.items()}
        Path(record).write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
    return target, drafts, results


def _build(results: Results) -> str:
    """The build the probed tree is (its llama-cpp-python release's vendored build)."""
    version = str(next(iter(results.values()))["version"]).rsplit(" ", 1)[-1]
    return vendored_build(version) or "11312"


def _plan(converted: tuple[Path, dict[str, Path], Results], name: str) -> LoadPlan:
    target, drafts, results = converted
    engine = parse_selection(f"{ENGINE}==b{_build(results)}")[0]
    on = EXAMPLES / "demo-target" if drafts[name].parent != target.parent else target
    return load_plan(Checkpoint.open(drafts[name]), engine, TargetModel.open(on))


def _refusals(plan: LoadPlan) -> set[str]:
    return {i.finding.code for i in plan.issues if i.kind == REFUSED} - {"target-no-capture"}


def test_every_case_agrees_with_the_plan(converted: tuple[Path, dict[str, Path], Results]) -> None:
    """Converted (and the GGUF passes the loader's tensor checks) exactly when the plan loads it; the aux ids written
    are the layer inputs the plan says the target captures."""
    _, _, results = converted
    assert not {n: r["error"] for n, r in results.items() if r["outcome"] == "probe-error"}
    differ = {}
    for name, result in results.items():
        plan = _plan(converted, name)
        if (result["outcome"] == "refused") != bool(_refusals(plan)):
            differ[name] = (result["outcome"], (result["error"] or "")[:120], sorted(_refusals(plan)))
        elif result["outcome"] == "loaded" and tuple(result["captured_inputs_of"]) != plan.aux.captured:
            differ[name] = (result["captured_inputs_of"], plan.aux.captured)
    assert not differ


def test_aux_ids_only_from_the_top_level(converted: tuple[Path, dict[str, Path], Results]) -> None:
    """eagle_config's ids are ignored (the target's default [2, 4, 5] of 8 layers is written); top-level ids are
    written as they are from b10454 on (#25794), ignored before."""
    _, _, results = converted
    assert results["demo-draft-sglang"]["aux_layer_ids"] == [2, 4, 5]
    assert results["nested-ids-136"]["aux_layer_ids"] == [2, 4, 5]
    reads_top_level = int(_build(results)) >= 10454
    assert results["top-level-ids-136"]["aux_layer_ids"] == ([1, 3, 6] if reads_top_level else [2, 4, 5])
    assert results["speculators-ids-136"]["aux_layer_ids"] == results["top-level-ids-136"]["aux_layer_ids"]
    assert "aux-layers" in {i.finding.code for i in _plan(converted, "nested-ids-136").issues}


def test_detection_needs_draft_vocab_size_and_one_layer(converted: tuple[Path, dict[str, Path], Results]) -> None:
    _, _, results = converted
    assert results["demo-draft"]["outcome"] == "loaded"  # speculators: num_hidden_layers only in the layer config
    assert "eagle3" in " ".join(results["demo-draft"]["notes"])
    for name in ("no-draft-vocab-size", "specforge-2-layers"):
        assert results[name]["outcome"] == "refused" and "Can not map tensor" in results[name]["error"], name


def test_d2t_is_written_absolute_and_checked(converted: tuple[Path, dict[str, Path], Results]) -> None:
    _, drafts, results = converted
    d2t = Checkpoint.open(drafts["demo-draft-sglang"]).read("d2t")
    assert d2t is not None
    assert results["demo-draft-sglang"]["draft_to_target"] == [i + int(v) for i, v in enumerate(d2t.tolist())]
    assert "out of range" in results["specforge-d2t-absolute"]["error"]
    assert "d2t-checked" in _refusals(_plan(converted, "specforge-d2t-absolute"))


def test_fix_to_llamacpp_writes_a_copy_the_converter_carries(tmp_path: Path) -> None:
    """The SpecForge demo export (nested ids, trained on outputs [2, 4, 5]), fixed for llama.cpp: top-level ids
    [3, 5, 6], which the converter writes into eagle3.target_layers."""
    if tree() is None:
        pytest.skip(f"no llama.cpp converter tree: set {DIR_VARIABLE} or run tox -e llamacpp11312")
    if "0.3.34" in (Path(str(tree())).parent.parent.name):
        pytest.skip("the converter of b9976 (llama-cpp-python 0.3.34) never reads aux ids: the fix names b10454")
    out = tmp_path / "fixed"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "fix", str(EXAMPLES / "demo-draft-sglang"), str(out),
                           "--to", ENGINE, "--target", str(EXAMPLES / "demo-target")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "convert_hf_to_gguf.py" in done.stdout and "--target-model-dir" in done.stdout
    result = run_probes(ENGINE, sys.executable, [(out, EXAMPLES / "demo-target")], timeout=120)[0]
    assert result["outcome"] == "loaded", result["error"]
    assert result["aux_layer_ids"] == [3, 5, 6] and result["captured_inputs_of"] == [3, 5, 6]
