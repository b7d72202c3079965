"""mlx-vlm's real loader (mlx_vlm.utils.load_model on CPU, then bind) on the probe cases, against the mlx-vlm plan.

Runs where an mlx-vlm interpreter is found (``EAGLE3_MLX_VLM_PYTHON``, or the tox env mlxvlm0710, where
``mlx_vlm`` imports); skips naming it otherwise. Besides the shared cases, speculators variants the mlx-vlm
rows turn on: midlayer.* names, no embed_tokens, no lm_head, no aux ids.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import REFUSED, LoadPlan, load_plan
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.probes.run import env_variable, find_engine_python, run_probes

pytestmark = pytest.mark.engine
ENGINE = "mlx-vlm"
Results = dict[str, dict[str, Any]]


def _variant(source: Path, out: Path, *, rename: Callable[[str], str] = str, drop: tuple[str, ...] = (),
             config: Callable[[dict[str, Any]], None] | None = None) -> Path:
    from safetensors.torch import load_file, save_file

    out.mkdir()
    data = json.loads((source / "config.json").read_text())
    if config is not None:
        config(data)
    (out / "config.json").write_text(json.dumps(data))
    tensors = load_file(str(source / "model.safetensors"))
    save_file({rename(k): v for k, v in tensors.items() if k not in drop}, str(out / "model.safetensors"))
    return out


def _no_ids(config: dict[str, Any]) -> None:
    config.pop("eagle_aux_hidden_state_layer_ids", None)


@pytest.fixture(scope="module")
def mlx(probe_cases: tuple[Path, dict[str, Path]], tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Path, dict[str, Path], Results]:
    python = find_engine_python(ENGINE)
    if python is None:
        pytest.skip(f"no mlx-vlm interpreter: set {env_variable(ENGINE)} or run tox -e mlxvlm0710")
    target, shared = probe_cases
    root = tmp_path_factory.mktemp("mlx-variants")
    spec = shared["speculators"]
    drafts = {**shared,
              "mlx-midlayer": _variant(spec, root / "midlayer", rename=lambda n: n.replace("layers.0.", "midlayer.")),
              "mlx-no-embed": _variant(spec, root / "no-embed", drop=("embed_tokens.weight",)),
              "mlx-no-lm-head": _variant(spec, root / "no-lm-head", drop=("lm_head.weight",)),
              "mlx-no-ids": _variant(spec, root / "no-ids", config=_no_ids)}
    results = run_probes(ENGINE, python, [(d, target) for d in drafts.values()], timeout=120)
    return target, drafts, dict(zip(drafts, results))


def _plan(mlx: tuple[Path, dict[str, Path], Results], name: str) -> LoadPlan:
    target, drafts, results = mlx
    engine = parse_selection(f"{ENGINE}=={results[name]['version']}")[0]
    return load_plan(Checkpoint.open(drafts[name]), engine, TargetModel.open(target))


def _refusals(plan: LoadPlan) -> set[str]:
    # the probe loads the drafter alone: the target's capture support is judged by its own row
    return {i.finding.code for i in plan.issues if i.kind == REFUSED} - {"target-no-capture"}


def test_every_case_agrees_with_the_plan_on_load_or_refusal(mlx: tuple[Path, dict[str, Path], Results]) -> None:
    _, _, results = mlx
    broken = {n: r["error"] for n, r in results.items() if r["outcome"] == "probe-error"}
    assert not broken
    differ = {n: (r["outcome"], r["stage"], (r["error"] or "")[:120], sorted(_refusals(_plan(mlx, n))))
              for n, r in results.items() if (r["outcome"] == "refused") != bool(_refusals(_plan(mlx, n)))}
    assert not differ


def test_flat_configs_and_midlayer_names_are_refused_by_the_strict_load(mlx: tuple[Path, dict[str, Path], Results]
                                                                        ) -> None:
    _, _, results = mlx
    assert "parameters not in model" in results["specforge"]["error"]
    assert _refusals(_plan(mlx, "specforge")) == {"speculators-only"}
    assert "parameters not in model" in results["mlx-midlayer"]["error"]
    assert "midlayer" in results["mlx-midlayer"]["error"] and _refusals(_plan(mlx, "mlx-midlayer"))


def test_loaded_drafts_match_the_plan(mlx: tuple[Path, dict[str, Path], Results]) -> None:
    _, _, results = mlx
    for name in ("speculators", "speculators-2-layers", "speculators-norm-before-fc", "mlx-no-lm-head"):
        result, plan = results[name], _plan(mlx, name)
        assert result["outcome"] == "loaded", (name, result["error"])
        assert tuple(result["captured_inputs_of"]) == plan.aux.captured, name
        assert result["draft_layers"] == plan.draft_layers, name
        assert result["norms"]["norm_before_fc"] == plan.norms["norm_before_fc"], name
        assert set(result["dropped"]) <= {"t2d"}, name
    assert results["speculators"]["dropped"] == ["t2d"]


def test_default_ids_come_from_the_drafts_own_layer_count(mlx: tuple[Path, dict[str, Path], Results]) -> None:
    """No ids in a one-layer draft: [2, 0, 0], captured at outputs [1, 0] = layer inputs [1, 2]."""
    _, _, results = mlx
    assert results["mlx-no-ids"]["aux_layer_ids"] == [2, 0, 0]
    assert results["mlx-no-ids"]["captured_inputs_of"] == [1, 2]
    assert results["mlx-no-ids"]["outcome"] == "refused" and "first round" in results["mlx-no-ids"]["error"]
    # the plan: no ids written (what the engine reads then is the habit's aux-ids-missing), and the refusal itself,
    # an fc wider than the states the engine's default ids feed it
    assert {"aux-ids-missing", "fc-width"} <= {i.finding.code for i in _plan(mlx, "mlx-no-ids").issues}


def test_embedding_and_head_sharing(mlx: tuple[Path, dict[str, Path], Results]) -> None:
    _, _, results = mlx
    assert results["speculators-random-embed"]["embed_tokens"] == "target"  # bind swaps it whatever it holds
    assert results["mlx-no-embed"]["outcome"] == "refused"
    assert "embed-required" in _refusals(_plan(mlx, "mlx-no-embed"))
    no_head = results["mlx-no-lm-head"]
    assert no_head["outcome"] == "loaded" and no_head["lm_head"] == "embed_tokens"
    assert "lm-head-embedding" in {i.finding.code for i in _plan(mlx, "mlx-no-lm-head").issues}


def test_fix_to_mlx_vlm_writes_a_copy_the_real_loader_loads(tmp_path: Path) -> None:
    """The SpecForge demo export, fixed for mlx-vlm (speculators config, layers.0.* names, the target's
    embedding, the aux ids): mlx-vlm's loader builds it and captures the training layer inputs."""
    import subprocess
    import sys

    python = find_engine_python(ENGINE)
    if python is None:
        pytest.skip(f"no mlx-vlm interpreter: set {env_variable(ENGINE)} or run tox -e mlxvlm0710")
    examples = Path(__file__).resolve().parent.parent / "examples"
    target = tmp_path / "target"
    shutil.copytree(examples / "demo-target", target)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "architectures": ["Qwen3_5ForConditionalGeneration"]}))
    out = tmp_path / "fixed"
    done = subprocess.run([sys.executable, "-m", "pytest_eagle3", "fix", str(examples / "demo-draft-sglang"), str(out),
                           "--to", ENGINE, "--target", str(target)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "after 3.6" in done.stdout
    result = run_probes(ENGINE, python, [(out, target)], timeout=120)[0]
    assert result["outcome"] == "loaded", result["error"]
    assert result["captured_inputs_of"] == [3, 5, 6] and result["embed_tokens"] == "target"
