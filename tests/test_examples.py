"""The bundled examples give the verdicts the README promises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_eagle3.knowledge.releases import RELEASES
from tests.conftest import ContractRun

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: The vLLM a run judges by default: the newest release read.
VLLM_DEFAULT = f"vllm=={RELEASES['vllm'][-1]}"


def test_bundled_examples_verdicts(run_contracts: Callable[..., ContractRun]) -> None:
    good = [EXAMPLES / "speculators-draft", EXAMPLES / "sglang-draft"]
    broken = EXAMPLES / "broken-d2t-draft"
    run = run_contracts([*good, broken], target=EXAMPLES / "tiny-target" / "config.json")
    assert [run.verdict(p) for p in good] == ["pass", "pass"]
    speculators, specforge = good
    assert run.engine_entry(speculators, "sglang==0.5.23")["failing"] == ["engine.architecture"]
    # a target's config alone: every rule runs and passes, the acceptance is unmeasured (no weights): PASS (static)
    assert run.engine_entry(speculators, VLLM_DEFAULT)["verdict"] == "pass"
    rows = [run.engine_entry(specforge, e) for e in ("sglang==0.5.23", VLLM_DEFAULT)]
    assert [(r["verdict"], r["not_judged"], r["unmeasured"][-1]) for r in rows] == [("pass", [], "engine.acceptance")] * 2
    outcomes = run.outcomes(good[0])
    assert all(outcome == "passed" for cid, (outcome, _) in outcomes.items() if not cid.startswith("reference."))
    # a config without weights: the static contracts run, the reference needs the model
    assert outcomes["reference.acceptance"][0] == "skipped"
    assert run.verdict(broken) == "fail"
    failed = {cid: msg for cid, (outcome, msg) in run.outcomes(broken).items() if outcome == "failed"}
    assert list(failed) == ["vocab.map"]
    assert failed["vocab.map"].startswith("vocab.map [absolute-ids]: d2t holds absolute target ids")


def test_examples_are_what_the_build_script_writes(tmp_path: Path) -> None:
    from examples.build_examples import EXAMPLES as SPECS
    from pytest_eagle3.testing.synth import write_checkpoint

    for name, spec in SPECS.items():
        rebuilt = write_checkpoint(spec, tmp_path / name)
        for file in ("config.json", "model.safetensors"):
            assert (rebuilt / file).read_bytes() == (EXAMPLES / name / file).read_bytes(), f"{name}/{file}"


def test_readme_support_matrix_is_generated_from_the_profiles() -> None:
    """docs/engines.md's matrix is the one the profiles produce now (regenerate: python -m pytest_eagle3
    matrix --readme docs/engines.md)."""
    from pytest_eagle3.verdict.matrix import readme_block, render_matrix

    readme = (Path(__file__).resolve().parents[1] / "docs" / "engines.md").read_text(encoding="utf-8")
    assert readme_block(readme) == render_matrix()


def test_readme_probe_matrix_is_the_recorded_one() -> None:
    from pytest_eagle3.probes.record import probes_markdown
    from pytest_eagle3.verdict.matrix import PROBES_END, PROBES_START, readme_block

    readme = (Path(__file__).resolve().parents[1] / "docs" / "engines.md").read_text(encoding="utf-8")
    assert readme_block(readme, PROBES_START, PROBES_END) == probes_markdown()
