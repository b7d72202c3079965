"""Drafts and targets by Hub id: the real huggingface_hub client against a local hub serving the bundled
examples (tests/hub_server.py). The verdicts equal those of the same files on disk; without
--eagle3-download-weights only headers and small tensors travel; a Hub that cannot give the repo is a
usage error naming what to do."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_eagle3.knowledge.releases import RELEASES
from tests.conftest import ContractRun
from tests.hub_server import HubServer, Repo, serve

#: The newest vLLM read (the default a bare "vllm" selects).
NEWEST_VLLM = RELEASES["vllm"][-1]

pytest.importorskip("huggingface_hub", reason="Hub ids need huggingface_hub (pip install huggingface_hub)")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DRAFTS = ("demo-draft", "demo-draft-sglang")
NOT_DOWNLOADED = "not run: weights not downloaded (give --eagle3-download-weights)"
NEEDS_EVERY_BYTE = ("weights.finite", "weights.initialised", "reference.acceptance", "engine.acceptance")


@pytest.fixture(scope="module")
def hub_server() -> Iterator[HubServer]:
    repos = {f"org/{name}": Repo(EXAMPLES / name) for name in (*DRAFTS, "demo-target")}
    repos["org/gated"] = Repo(EXAMPLES / "demo-draft", gated=True)
    with serve(repos) as hub:
        yield hub


@pytest.fixture
def hub(hub_server: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubServer:
    """HF_ENDPOINT at the local hub and HF_HOME in tmp. The library reads both when it is imported (already
    done, by transformers, in this process), so its constants are set as those variables would set them."""
    from huggingface_hub import constants

    home = tmp_path / "hf"
    monkeypatch.setenv("HF_ENDPOINT", hub_server.url)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setattr(constants, "ENDPOINT", hub_server.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub_server.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    hub_server.sent.clear()
    return hub_server


def failing(run: ContractRun) -> dict[tuple[str, str], list[str]]:
    """(checkpoint folder name, engine) -> the report's failing contracts."""
    return {(_name(c["path"]), f"{e['engine']}=={e['version']}"): sorted(e["failing"])
            for c in run.report["checkpoints"] for e in c["engines"]}


def _name(path: str) -> str:
    return path.removeprefix("hf://org/").split("@")[0] if path.startswith("hf://") else Path(path).name


def not_run(run: ContractRun) -> dict[str, set[str]]:
    """contract id -> the reasons it did not run, over every checkpoint and engine."""
    out: dict[str, set[str]] = {}
    for ckpt in run.report["checkpoints"]:
        for entry in ckpt["engines"]:
            for item in entry["not_run"]:
                out.setdefault(item["id"], set()).add(item["reason"])
    return out


def test_hub_ids_read_by_headers_give_the_verdicts_of_the_same_files(
        hub: HubServer, run_contracts: Callable[..., ContractRun]) -> None:
    """Drafts and target by Hub id, no weights downloaded: the failing contracts of every checkpoint and engine
    are those of the same drafts on disk judged with the target's config; the contracts that read every weight
    byte say how to run them; under 2% of the weights' bytes travel (headers, d2t, norms)."""
    on_disk = run_contracts([EXAMPLES / d for d in DRAFTS], target=EXAMPLES / "demo-target" / "config.json")
    on_hub = run_contracts([f"hf://org/{d}" for d in DRAFTS], target="hf://org/demo-target")
    assert on_hub.result.ret == on_disk.result.ret == 1, on_hub.output[-3000:]
    assert failing(on_hub) == failing(on_disk)
    assert failing(on_hub)[("demo-draft-sglang", f"vllm=={NEWEST_VLLM}")] == ["engine.aux_layers"]
    reasons = not_run(on_hub)
    for contract in NEEDS_EVERY_BYTE:
        assert any(NOT_DOWNLOADED in reason for reason in reasons[contract]), (contract, reasons.get(contract))
    # the verdict names the resolved commit
    paths = [c["path"] for c in on_hub.report["checkpoints"]]
    assert paths == [f"hf://org/{d}@{hub.repos[f'org/{d}'].sha}" for d in DRAFTS]
    assert on_hub.report["target"] == f"hf://org/demo-target@{hub.repos['org/demo-target'].sha}"
    weights = sum((EXAMPLES / n / "model.safetensors").stat().st_size for n in (*DRAFTS, "demo-target"))
    sent = sum(hub.file_bytes(f"org/{n}") for n in (*DRAFTS, "demo-target"))
    assert 0 < sent < 0.02 * weights, f"{sent} of {weights} weight bytes sent"
    # the README's and docs/hub.md's figure is this measurement, not a figure written by hand
    figure = f"{round(sent / 1000)} KB of {weights / 1e6:.1f} MB ({100 * sent / weights:.1f}%)"
    for name in ("README.md", "docs/hub.md"):
        text = " ".join((EXAMPLES.parent / name).read_text(encoding="utf-8").split()).replace("of their", "of")
        assert figure in text, (name, figure)


def test_download_weights_runs_the_weight_scans_on_the_cached_files(
        hub: HubServer, run_contracts: Callable[..., ContractRun]) -> None:
    """With --eagle3-download-weights the weights come through the library's cache and the contracts that read
    every byte run there, with the outcomes they have on disk (the acceptance measurements run too: the main job
    on the demo pair gives the same failing contracts and predictions by Hub id as on disk, docs/hub.md; not
    repeated here, it costs a target run)."""
    options = ("-k", "weights or config", "--eagle3-engine=vllm")
    on_disk = run_contracts([EXAMPLES / "demo-draft-sglang"], *options, target=EXAMPLES / "demo-target")
    on_hub = run_contracts(["hf://org/demo-draft-sglang"], *options, "--eagle3-download-weights",
                           target="hf://org/demo-target")
    hub_path, disk_path = on_hub.report["checkpoints"][0]["path"], EXAMPLES / "demo-draft-sglang"
    for contract in ("weights.finite", "weights.initialised"):
        assert on_hub.outcomes(hub_path)[contract] == on_disk.outcomes(disk_path)[contract]
        assert on_hub.outcomes(hub_path)[contract][0] == "passed"
    assert failing(on_hub) == failing(on_disk)
    assert hub.file_bytes("org/demo-draft-sglang") >= (disk_path / "model.safetensors").stat().st_size


@pytest.mark.parametrize(("spec", "said"), [
    ("hf://org/no-such-draft", "no such repo on the Hub"),
    ("hf://org/gated", "is a gated repo and this token has no access"),
    ("hf://org/demo-draft@no-such-branch", "no such revision"),
    ("hf://not a repo id", "is not a Hub id hf://ORG/NAME[@REVISION]"),
])
def test_a_repo_the_hub_cannot_give_is_a_usage_error(
        hub: HubServer, pytester: pytest.Pytester, spec: str, said: str) -> None:
    result = pytester.runpytest(f"--eagle3-ckpt={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(f"--eagle3-ckpt: .*{re.escape(said)}", result.stderr.str()), result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_offline_without_a_cached_copy_is_a_usage_error(
        hub: HubServer, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    if hasattr(constants, "is_offline_mode"):
        monkeypatch.setattr(constants, "is_offline_mode", lambda: True)
    result = pytester.runpytest("--eagle3-target=hf://org/demo-target", f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--eagle3-target: hf://org/demo-target: HF_HUB_OFFLINE is set and the repo is not in the cache" in \
        result.stderr.str()
    assert hub.sent == {}


def test_the_environment_points_the_command_at_the_hub(hub_server: HubServer, tmp_path: Path) -> None:
    """``python -m pytest_eagle3 check`` in a fresh process: HF_ENDPOINT alone decides where the library goes;
    no network there is a usage error saying so."""
    env = {"HF_ENDPOINT": hub_server.url, "HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "pytest_eagle3", "check", "hf://org/no-such-draft", "-p", "no:randomly"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr[-2000:]
    assert "hf://org/no-such-draft: no such repo on the Hub" in done.stderr
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    command[4] = "hf://org/demo-draft"
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "hf://org/demo-draft: cannot reach the Hub" in done.stderr and "Traceback" not in done.stderr


def test_plan_reads_a_hub_draft_by_its_headers(hub: HubServer, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_eagle3.shell.cli import main

    assert main(["plan", "hf://org/demo-draft-sglang", "--engine", "vllm==0.33.0",
                 "--target", "hf://org/demo-target"]) == 0
    out = capsys.readouterr().out
    assert "target feeds: outputs of layers [1, 3, 4]; draft trained on: outputs of layers [2, 4, 5]" in out
    assert hub.file_bytes("org/demo-draft-sglang") < 0.05 * (EXAMPLES / "demo-draft-sglang" / "model.safetensors").stat().st_size


def test_fix_downloads_a_hub_draft_writes_the_copy_and_proves_it(hub: HubServer, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``fix hf://...``: the draft's weights come through the library's cache (every byte is copied), the copy is
    written and judged; the Hub target gives its config (no measurement without its weights)."""
    from pytest_eagle3.shell.cli import main

    out = tmp_path / "fixed"
    code = main(["fix", "hf://org/demo-draft-sglang", str(out), "--to", "vllm==0.33.0", "--target",
                 "hf://org/demo-target"])
    said = capsys.readouterr()
    assert code == 0, said.err[-3000:]
    assert "downloading the weights of hf://org/demo-draft-sglang" in said.err
    assert "the rules pass on" in said.out and (out / "eagle3-fix.json").is_file()
    assert hub.file_bytes("org/demo-draft-sglang") >= (EXAMPLES / "demo-draft-sglang" / "model.safetensors").stat().st_size
    assert hub.file_bytes("org/demo-target") < (EXAMPLES / "demo-target" / "model.safetensors").stat().st_size


def test_capture_downloads_a_hub_target_and_writes_the_dump(hub: HubServer, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_eagle3.shell.cli import main

    dump = tmp_path / "dump"
    assert main(["capture", "hf://org/demo-target", str(dump), "--new-tokens", "8"]) == 0
    said = capsys.readouterr()
    assert "downloading the weights of hf://org/demo-target" in said.err
    assert (dump / "manifest.json").is_file() and said.out.strip().endswith("manifest.json")


def test_sweep_takes_hub_checkpoints(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Hub drafts in a sweep are pinned to their commit and judged by their headers, as pytest judges them."""
    import json

    from pytest_eagle3.shell.cli import main

    out = tmp_path / "sweep"
    assert main(["sweep", *(f"hf://org/{d}" for d in DRAFTS), "--target", "hf://org/demo-target", "--out", str(out),
                 "--engine", "vllm==0.33.0"]) == 0
    capsys.readouterr()
    data = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    paths = [c["path"] for c in data["checkpoints"]]
    assert paths == [f"hf://org/{d}@{hub.repos[f'org/{d}'].sha}" for d in DRAFTS]
    rows = {c["name"].split("@")[0]: c["engines"][0] for c in data["checkpoints"]}
    assert rows["demo-draft-sglang"]["failing"] == ["engine.aux_layers"]


def test_a_hub_draft_read_by_headers_is_not_called_corrupt_by_the_repair_line(
        hub: HubServer, run_contracts: Callable[..., ContractRun]) -> None:
    """Its weights were only not downloaded: the repair line offers the fix (which downloads them), never
    '[unreadable-tensor] ... truncated or its header lies'."""
    run = run_contracts(["hf://org/demo-draft-sglang"], "--eagle3-engine=vllm", target="hf://org/demo-target")
    repair = [line for line in run.output.splitlines() if line.startswith("repair ")]
    assert repair and not any("cannot be read" in line or "truncated" in line for line in repair), repair
    assert any("python -m pytest_eagle3 fix hf://org/demo-draft-sglang" in line for line in repair), repair


def test_a_draft_naming_its_target_by_hub_id_is_judged_against_it(
        hub: HubServer, run_contracts: Callable[..., ContractRun], tmp_path: Path) -> None:
    """speculators' verifier.name_or_path "org/demo-target": read as hf://org/demo-target (config and headers), so
    the aux layers are judged with no --eagle3-target; the report says where the target came from."""
    import json
    import shutil

    draft = tmp_path / "draft"
    shutil.copytree(EXAMPLES / "demo-draft", draft)
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "org/demo-target"
    (draft / "config.json").write_text(json.dumps(config))
    run = run_contracts([draft], "--eagle3-engine=vllm")
    named = run.report["checkpoints"][0]["named_target"]
    assert named["named"] == "org/demo-target" and named["path"].startswith("hf://org/demo-target@")
    assert run.engine_outcomes(draft, f"vllm=={NEWEST_VLLM}")["engine.aux_layers"][0] == "passed"
    assert hub.file_bytes("org/demo-target") < (EXAMPLES / "demo-target" / "model.safetensors").stat().st_size
