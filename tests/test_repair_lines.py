"""The repair lines under the verdict table: the ``fix`` command where a copy repairs the row (and it
works as offered), "by hand" where none does, one line per problem; a failed node id pasted back re-runs; a fixed
copy is read as its record says."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.user_runs import (
    DEMO,
    DEMO_SGLANG,
    EXAMPLES,
    ROOT,
    SGLANG,
    TARGET,
    VLLM,
    read_report,
    run_python,
)


def test_a_failed_node_id_pasted_back_re_runs_and_the_summary_names_the_repair(tmp_path: Path) -> None:
    options = [f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-target={EXAMPLES / 'demo-target' / 'config.json'}",
               "--eagle3-engine=vllm"]
    first = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-q", *options], tmp_path)
    assert first.returncode == 1, first.stdout[-3000:]
    assert f"repair {DEMO_SGLANG} ({VLLM}): python -m pytest_eagle3 fix {DEMO_SGLANG} OUT --to {VLLM}" \
        in first.stdout
    node = next(line.split()[1] for line in first.stdout.splitlines()
                if line.startswith("FAILED") and "test_aux_layers" in line)
    again = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-q", node, *options], tmp_path)
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout[-3000:] + again.stderr
    assert "not found" not in again.stdout + again.stderr and "Traceback" not in again.stdout + again.stderr
    # printed again as it re-runs, file part and all (pytest may add " - reason" where the width allows)
    assert any(line == f"FAILED {node}" or line.startswith(f"FAILED {node} - ") for line in again.stdout.splitlines()), \
        again.stdout[-3000:]


@pytest.mark.slow
def test_the_summary_offers_fix_only_for_the_rows_a_copy_repairs_and_says_the_rest_by_hand(tmp_path: Path) -> None:
    """SGLang 0.4.9 captures the wrong layers under CUDA graphs whatever the config says: no copy repairs that
    row, so it is told what to do by hand; vLLM's aux ids are a config edit, and the offered command writes it."""
    target = EXAMPLES / "demo-target" / "config.json"
    first = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-q", f"--eagle3-ckpt={DEMO_SGLANG}", f"--eagle3-target={target}",
                  "--eagle3-engine=sglang==0.4.9,sglang==0.5.23,vllm==0.33.0"], tmp_path)
    assert first.returncode == 1 and "Traceback" not in first.stdout + first.stderr, first.stdout[-3000:]
    repair = [line for line in first.stdout.splitlines() if line.startswith("repair ")]
    assert repair == [
        (f"repair {DEMO_SGLANG} (vllm==0.33.0): python -m pytest_eagle3 fix {DEMO_SGLANG} OUT --to vllm==0.33.0 "
         f"--target {target}"),
        (f"repair {DEMO_SGLANG} (sglang==0.4.9) by hand, python -m pytest_eagle3 fix cannot: serve with SGLang >= "
         "0.5.11 (or --disable-cuda-graph, slow)")], repair
    words = repair[0].split(": ", 1)[1].split()
    fixed = run_python([*words[1:]], tmp_path)  # the command as offered, OUT and all
    assert fixed.returncode == 0 and "the rules pass on OUT for vllm==0.33.0" in fixed.stdout, fixed.stderr


@pytest.mark.slow
def test_a_fixed_copy_is_read_as_its_record_says_and_no_reason_is_cut(tmp_path: Path) -> None:
    fixed = run_python(["-m", "pytest_eagle3", "fix", str(DEMO), "OUT", "--to", "sglang==0.5.23"], tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    check = ["-m", "pytest_eagle3", "check", "OUT", "--engine", "sglang==0.5.23", "-p", "no:cacheprovider",
             "--target", str(EXAMPLES / "demo-target" / "config.json")]
    done = run_python(check, tmp_path, COLUMNS="100")
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:]
    assert re.search(r"\nOUT +speculators \(fixed copy\) +any +PASS \(static\)", done.stdout), done.stdout[-3000:]
    assert "unknown" not in done.stdout.split("EAGLE-3 verdict")[1] and "format.detected" not in done.stdout
    record = tmp_path / "OUT" / "eagle3-fix.json"  # a copy an older fix wrote: no producer in its record
    data = json.loads(record.read_text())
    record.write_text(json.dumps({k: v for k, v in data.items() if k != "producer"}))
    older = run_python(check, tmp_path, COLUMNS="100").stdout
    under = older.split("EAGLE-3 verdict")[1].split("\n", 1)[1]
    assert "format.detected: a layout several producers share" in under, older[-3000:]
    reason = " ".join(under.split("format.detected: ", 1)[1].split("\n  reference.")[0].split())
    assert reason.endswith("(the reference measurement with --eagle3-target=DIR decides the convention, or state "
                           "it with --eagle3-aux-convention)"), reason
    assert not [line for line in under.splitlines() if line.rstrip().endswith("...") or len(line) > 100], under


def test_a_truncated_file_counts_its_problems_and_its_repair_line_is_one_line(tmp_path: Path) -> None:
    from pytest_eagle3.testing.synth import SynthSpec, write_checkpoint

    draft = write_checkpoint(SynthSpec().with_faults("truncated"), tmp_path / "draft")
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-report={tmp_path / 'v.json'}"], tmp_path)
    report = read_report(tmp_path / "v.json")
    readable = next(c for c in report["checkpoints"][0]["engines"][0]["contracts"]  # type: ignore[index]
                    if c["id"] == "checkpoint.readable")
    finding = readable["findings"][0]
    count = int(finding["summary"].split()[0])
    if count > 8:
        assert finding["details"][0].startswith(f"+{count - 8} more: "), finding
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert repair and all("re-export the checkpoint" in line for line in repair), repair
    assert len(" ".join(repair)) < 400, repair


def test_an_fc_trained_on_two_states_gets_one_fix_everywhere(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    draft = tmp_path / "fc2"
    shutil.copytree(DEMO_SGLANG, draft)
    weights = load_file(draft / "model.safetensors")
    weights["fc.weight"] = weights["fc.weight"][:, :128].contiguous()
    save_file(weights, draft / "model.safetensors")
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", "--eagle3-engine=vllm",
                 f"--eagle3-target={TARGET / 'config.json'}"], tmp_path)
    said = " ".join(done.stdout.split())
    assert "fc.weight was trained on 2 concatenated states but the config names 3 aux ids [2, 4, 5]" in said
    assert "config.json names 3 aux ids [2, 4, 5] but fc was trained on 2 states" in said  # engine.fc agrees
    assert "num_aux_hidden_states: 2" not in said and "fc expects 192" not in said
    assert "the checkpoint's fc takes 128" in said


def test_aux_ids_off_by_one_get_the_fix_that_writes_the_measured_layers(tmp_path: Path) -> None:
    draft = tmp_path / "off-by-one"
    shutil.copytree(DEMO_SGLANG, draft)
    config = json.loads((draft / "config.json").read_text())
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 3, 4]  # trained on outputs of [2, 4, 5]
    (draft / "config.json").write_text(json.dumps(config))
    done = run_python(["-m", "pytest", "-p", "no:cacheprovider", f"--eagle3-ckpt={draft}", f"--eagle3-target={TARGET}"],
                tmp_path)
    repair = [line for line in done.stdout.splitlines() if line.startswith("repair ")]
    assert repair == [f"repair {draft} ({SGLANG}, {VLLM}): python -m pytest_eagle3 fix {draft} OUT --to "
                      f"{SGLANG},{VLLM} --target {TARGET}"], repair
    assert "fix cannot" not in done.stdout and "input-of" in (ROOT / "README.md").read_text()
