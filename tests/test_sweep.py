"""python -m pytest_eagle3 sweep: a training run's checkpoints judged and predicted per engine, one target run."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.shell.cli import main
from pytest_eagle3.verdict import sweep as sweep_module
from pytest_eagle3.verdict.sweep import CheckpointRow, EngineRow, Sweep, checkpoints_from, write
from tests.conftest import counted_forwards

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ENGINES = "sglang==0.5.23,vllm==0.33.0"
#: Given in this order (not sorted): a list is kept as given.
DRAFTS = ("trained-outputof-speculators", "trained-2layer", "trained-inputof-toplevel")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int, int]:
    """The sweep of three trained drafts against the demo target; how many times the target's side was built,
    and the target's forward passes."""
    pytest.importorskip("transformers", reason="the sweep's predictions need transformers (pip install -e '.[target]')")
    from pytest_eagle3.reference import predict

    out = tmp_path_factory.mktemp("sweep") / "out"
    built = []
    real = predict.build_target_feed

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(args[0])
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()) as said, \
            contextlib.redirect_stderr(io.StringIO()), counted_forwards() as forwards:
        mp.setattr(predict, "build_target_feed", counted)
        mp.delenv("COLUMNS", raising=False)  # what a pipe gets: whole lines, whatever an earlier test left set
        code = main(["sweep", *(str(EXAMPLES / d) for d in DRAFTS), "--target", str(EXAMPLES / "demo-target"),
                     "--engine", ENGINES, "--out", str(out)])
    assert code == 0
    return out, said.getvalue(), len(built), len(forwards)


def test_one_target_run_serves_every_checkpoint_and_engine(swept: tuple[Path, str, int, int],
                                                            capture_forwards: int) -> None:
    out, printed, built, forwards = swept
    assert built == 1
    assert 0 < forwards <= capture_forwards  # three checkpoints, two engines: the passes of one capture
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert data["target_runs"] == 1
    assert "sweep: 3 checkpoints x 2 engine versions in" in printed and "1 target run" in printed


def test_the_sweep_names_the_best_checkpoint_per_engine(swept: tuple[Path, str, int, int]) -> None:
    out, printed, _, _ = swept
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert [c["name"] for c in data["checkpoints"]] == list(DRAFTS)
    assert data["best"] == {"sglang==0.5.23": str(EXAMPLES / "trained-inputof-toplevel"),
                            "vllm==0.33.0": str(EXAMPLES / "trained-2layer")}
    assert f"best for vllm==0.33.0: {EXAMPLES / 'trained-2layer'}" in printed
    rows = {c["name"]: {e["engine"]: e for e in c["engines"]} for c in data["checkpoints"]}
    lossy = rows["trained-outputof-speculators"]["vllm==0.33.0"]
    assert lossy["verdict"] == "fail" and lossy["failing"] == ["engine.acceptance", "engine.aux_layers"]
    assert lossy["predicted_acceptance"] < data["checkpoints"][0]["as_trained"] - 0.5
    assert lossy["fix"].startswith("write [3, 5, 6] into eagle_aux_hidden_state_layer_ids")
    refused = rows["trained-2layer"]["sglang==0.5.23"]
    assert (refused["outcome"], refused["predicted_acceptance"], refused["failing"]) == \
        ("refused", None, ["engine.architecture"])
    assert all(3.5 < c["as_trained"] < 4.0 for c in data["checkpoints"])


def test_the_markdown_table_and_the_plot(swept: tuple[Path, str, int, int]) -> None:
    out, printed, _, _ = swept
    md = (out / "sweep.md").read_text(encoding="utf-8")
    assert "| `trained-outputof-speculators` | 3.75 | refused **FAIL** engine.architecture | 2.51 **FAIL** " \
           "engine.acceptance, engine.aux_layers |" in md
    assert "- best for sglang==0.5.23: `trained-inputof-toplevel` (3.66, pass (partial))" in md  # format.detected: a shared layout
    if sweep_module.matplotlib_installed():
        assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "![predicted acceptance per checkpoint](sweep.png)" in md
    else:
        assert not (out / "sweep.png").exists() and sweep_module.NO_MATPLOTLIB in printed


def _tiny_sweep() -> Sweep:
    rows = [CheckpointRow(f"run/step-{n}", 3.0 + n / 10, (EngineRow("vllm==0.33.0", "pass", "loads", (), 2.5 + n / 10,
                                                                    "measured", None),)) for n in (1, 2)]
    return Sweep("target", ("vllm==0.33.0",), tuple(rows), 1)


def test_without_matplotlib_the_plot_is_skipped_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_module, "matplotlib_installed", lambda: False)
    said = write(_tiny_sweep(), tmp_path / "out")
    assert said == [str(tmp_path / "out" / "sweep.json"), str(tmp_path / "out" / "sweep.md"), sweep_module.NO_MATPLOTLIB]
    assert "pip install 'pytest-eagle3[plot]'" in sweep_module.NO_MATPLOTLIB
    md = (tmp_path / "out" / "sweep.md").read_text(encoding="utf-8")
    assert "sweep.png" not in md and "best for vllm==0.33.0: `step-2` (2.70, pass)" in md


def test_an_engine_refusing_every_checkpoint_has_no_best(tmp_path: Path) -> None:
    refused = EngineRow("sglang==0.5.23", "fail", "refused", ("engine.architecture",), None, "measured", "convert")
    rows = tuple(CheckpointRow(f"run/step-{n}", 3.0, (refused,)) for n in (1, 2))
    sweep = Sweep("target", ("sglang==0.5.23",), rows, 1)
    assert sweep.best() == {"sglang==0.5.23": None}
    write(sweep, tmp_path / "out")
    md = (tmp_path / "out" / "sweep.md").read_text(encoding="utf-8")
    assert "- best for sglang==0.5.23: none: it refuses every checkpoint" in md
    assert "| `step-1` | 3.00 | refused **FAIL** engine.architecture |" in md


def _run_folder(tmp_path: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        (tmp_path / "run" / name).mkdir(parents=True)
        (tmp_path / "run" / name / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "run" / "logs").mkdir()  # not a checkpoint: no config.json
    return tmp_path / "run"


def test_checkpoints_in_training_order(tmp_path: Path) -> None:
    run = _run_folder(tmp_path, ("step-10", "step-2", "step-1"))
    names = [p.name for p in checkpoints_from([str(run)])]
    assert names == ["step-1", "step-2", "step-10"]
    assert [p.name for p in checkpoints_from([str(run / "step-*")])] == names
    assert [p.name for p in checkpoints_from([str(run / "step-10"), str(run / "step-1")])] == ["step-10", "step-1"]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_bad_inputs_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = str(EXAMPLES / "demo-target")
    err = _usage_error(["sweep", str(tmp_path / "nothing-*"), "--target", target, "--out", str(tmp_path / "o")], capsys)
    assert f"CKPT: {tmp_path / 'nothing-*'}: no checkpoint folder (with a config.json) matches" in err
    err = _usage_error(["sweep", str(tmp_path), "--target", target, "--out", str(tmp_path / "o")], capsys)
    assert "neither a checkpoint (no config.json) nor a folder of checkpoints" in err
    err = _usage_error(["sweep", str(EXAMPLES / "trained-2layer"), "--target", target, "--out", str(tmp_path)], capsys)
    assert f"--out: {tmp_path} already exists; sweep never overwrites" in err
    (tmp_path / "notes.txt").write_text("a file\n", encoding="utf-8")
    err = _usage_error(["sweep", str(EXAMPLES / "trained-2layer"), "--target", target, "--out",
                        str(tmp_path / "notes.txt" / "o")], capsys)
    assert f"--out: {tmp_path / 'notes.txt' / 'o'} cannot be written: {tmp_path / 'notes.txt'} is a file" in err
    err = _usage_error(["sweep", str(EXAMPLES / "trained-2layer"), "--out", str(tmp_path / "o")], capsys)
    assert "--target: give the target model's directory" in err
    assert not (tmp_path / "o").exists()


def test_the_exit_status_is_the_gate_the_user_chose(swept: tuple[Path, str, int, int], tmp_path: Path) -> None:
    """``--fail-on``: the bundled sweep has a passing checkpoint for every engine version (``best``, the default, exits
    0, as the fixture's run did) and failing cells (``any`` exits 1 naming each); the gate reads the sweep written."""

    out, said, _, _ = swept
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    rows = tuple(CheckpointRow(c["path"], c["as_trained"], tuple(
        EngineRow(e["engine"], e["verdict"], e["outcome"], tuple(e["failing"]), e["predicted_acceptance"], e["basis"],
                  e["fix"]) for e in c["engines"]), c["problem"] or "") for c in data["checkpoints"])
    sweep = Sweep(data["target"], tuple(data["engines"]), rows, data["target_runs"])
    assert sweep.gate("best") == [] and sweep.gate("never") == []
    failing = sweep.gate("any")
    cells = [e for c in data["checkpoints"] for e in c["engines"] if not e["verdict"].startswith("pass")]
    assert len(failing) == len(cells) > 0
    assert "sweep fails" not in said
    code = main(["sweep", str(EXAMPLES / "trained-inputof-sglang"), "--target", str(EXAMPLES / "demo-target"),
                 "--engine", ENGINES, "--out", str(tmp_path / "any"), "--fail-on", "any"])
    assert code == 1


def test_a_checkpoint_that_fails_is_never_named_best() -> None:
    failing = EngineRow("tokenspeed==0.1.1", "fail", "loads with loss", ("engine.aux_layers",), 1.43, "measured", "x")
    passing = EngineRow("tokenspeed==0.1.1", "pass", "loads", (), 1.20, "measured", None)
    high = Sweep("t", ("tokenspeed==0.1.1",), (CheckpointRow("run/inputof", 3.7, (failing,)),), 1)
    assert high.best() == {"tokenspeed==0.1.1": None}
    assert "no checkpoint passes" in high.why_no_best("tokenspeed==0.1.1") and "FAIL" in high.why_no_best("tokenspeed==0.1.1")
    both = Sweep("t", ("tokenspeed==0.1.1",), (CheckpointRow("run/a", 3.7, (failing,)), CheckpointRow("run/b", 3.7, (passing,))), 1)
    best = both.best()["tokenspeed==0.1.1"]
    assert best is not None and best.path == "run/b"
