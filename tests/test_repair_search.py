"""``fix`` proves only what it measured: a draft whose config names layers it was never trained on is repaired from
the layer sets the search measures with the target's weights, and with the target's config alone ``fix`` says the
rules pass and what would prove the acceptance. The source is never modified."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_eagle3.repair.fix import tree_hash

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGET = EXAMPLES / "demo-target"
#: demo-draft-sglang is trained on the outputs of layers [2, 4, 5] (layer inputs [3, 5, 6]); its own figure on
#: vLLM 0.34.0, read as trained, is 3.67 (examples/build_demo_pair.py).
WRONG_IDS = [0, 1, 2]
ENGINE = "vllm==0.34.0"


def _draft_naming_wrong_layers(root: Path) -> Path:
    """A copy of demo-draft-sglang whose config names layers [0, 1, 2] (SpecForge's field, in eagle_config)."""
    draft = root / "draft"
    shutil.copytree(EXAMPLES / "demo-draft-sglang", draft)
    config = json.loads((draft / "config.json").read_text())
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = WRONG_IDS
    (draft / "config.json").write_text(json.dumps(config, indent=2))
    return draft


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command as a user runs it, from ``cwd`` (outside the clone)."""
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, check=False, timeout=900)


@pytest.mark.slow
def test_the_search_repairs_a_draft_whose_config_names_the_wrong_layers(tmp_path: Path) -> None:
    """With the target's weights: the layers found reach >= 3.5 on vLLM 0.34.0 (the draft's own 3.67), far above
    every reading of the config's ids; the copy's re-check reads PASS, measured, and so does the printed command."""
    pytest.importorskip("transformers", reason="the reference forward runs the target with transformers")
    draft = _draft_naming_wrong_layers(tmp_path)
    before = tree_hash(draft)
    done = _run(tmp_path, "-m", "pytest_eagle3", "fix", "draft", "fixed", "--to", ENGINE, "--target", str(TARGET))
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    trained = re.search(r"training layer inputs: (\[[\d, ]+\]) \(measured: searched (\d+) of 84 layer sets: layer "
                        r"inputs \1 reach (\d\.\d\d), (\d\.\d\d) above the config's ids at their best", out)
    assert trained, out
    assert int(trained.group(2)) < 84, "the search measures part of the space, not every set"
    assert float(trained.group(3)) >= 3.5 and float(trained.group(4)) >= 1.0, trained.group(0)
    line = next(x for x in out.splitlines() if x.startswith("predicted acceptance, vLLM 0.34.0: "))
    after = re.search(r", after (\d\.\d\d) \(as trained (\d\.\d\d)\)$", line)
    assert after and float(after.group(1)) >= 3.5, line
    assert f"proof: the contracts pass on fixed for {ENGINE}, the acceptance measured: any PASS, {ENGINE} PASS" in out
    written = json.loads((tmp_path / "fixed" / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"]
    assert str(written) == trained.group(1)
    assert tree_hash(draft) == before, "the source was modified"

    command = next(x for x in out.splitlines() if x.strip().startswith("check again: ")).split(": ", 1)[1]
    assert f"--eagle3-engine={ENGINE}" in command
    again = _run(tmp_path, "-m", *shlex.split(command), "-p", "no:randomly", "-p", "no:cacheprovider")
    assert again.returncode == 0, again.stdout[-3000:]
    row = next(x for x in again.stdout.splitlines() if x.split()[:1] == [ENGINE] or f" {ENGINE} " in x)
    assert re.search(rf"{re.escape(ENGINE)}\s+PASS\s+(\d\.\d\d)", row), row
    assert float(re.search(r"PASS\s+(\d\.\d\d)", row).group(1)) >= 3.5, row  # type: ignore[union-attr]
    assert tree_hash(draft) == before, "the source was modified"


@pytest.mark.slow
def test_with_the_target_s_config_only_the_rules_pass_and_the_weights_are_named(tmp_path: Path) -> None:
    """Nothing can see the wrong layers without the weights: no proof claimed, the acceptance named unmeasured."""
    draft = _draft_naming_wrong_layers(tmp_path)
    before = tree_hash(draft)
    done = _run(tmp_path, "-m", "pytest_eagle3", "fix", "draft", "fixed", "--to", ENGINE, "--target",
                str(TARGET / "config.json"))
    out = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "proof" not in out and "None" not in out
    assert f"the rules pass on fixed for {ENGINE}: any PASS (static), {ENGINE} PASS (static)" in out
    assert ("not measured: reference.acceptance, reference.convention, engine.acceptance: the acceptance and the "
            "layers the draft was trained on; the target's weights prove them: --target DIR (the model directory, "
            "with its weights)") in out
    assert "config: eagle_aux_hidden_state_layer_ids: (not set) -> [1, 2, 3]" in out
    assert tree_hash(draft) == before


def test_the_climb_finds_the_layers_from_the_config_s_ids_alone(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the engines' default sets as starting points (here they name the config's own layers), the climb
    from [0, 1, 2] still reaches a set the draft accepts >= 3.5 on, measuring fewer sets than exist."""
    pytest.importorskip("transformers", reason="the reference forward runs the target with transformers")
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference import layer_search
    from pytest_eagle3.reference.predict import PredictionSession

    monkeypatch.setattr(layer_search, "default_aux_inputs", lambda layers: (0, 1, 2))
    predictor = PredictionSession().predictor(Checkpoint.open(_draft_naming_wrong_layers(tmp_path)), str(TARGET))
    found = layer_search.search_layers(predictor)
    assert found is not None and found.found and found.complete, found
    assert found.best.mean_acceptance_length >= 3.5, found.words
    assert found.own.mean_acceptance_length < 2.5 and found.measured < found.possible == 84, found.words
    assert len(set(found.inputs)) == 3 and list(found.inputs) == sorted(found.inputs)
