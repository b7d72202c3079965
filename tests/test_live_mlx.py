"""mlx-vlm live on CPU: its own generate loop (``mlx_vlm.generate.ar.generate_step``) with its EAGLE-3 drafter, in
mlx-vlm's interpreter (``pytest_eagle3/live/mlx_generate.py``), judged against the plugin's prediction.

On ``qwen35-target`` (a Qwen3.5 model, a family whose mlx-vlm language model returns the captured layer states) and
drafts trained on it (``examples/build_mlx_pair.py``): mlx-vlm's own per-round counts give the acceptance, which must
be within 0.05 per position of ``engine.acceptance``'s prediction for the installed mlx-vlm, the good draft passing
the plugin's live judgement and the broken ones failing it with the drop the prediction names.

On the demo pair (a Llama target) the plan refuses: mlx-vlm's Llama language model takes the capture request as
``**kwargs`` and returns no hidden states (mlx_vlm/models/llama/language.py LanguageModel.__call__), and the real loop
stops before its first round, where the plan says.

Runs where an mlx-vlm interpreter is found (``EAGLE3_MLX_VLM_PYTHON``, or ``tox -e mlxvlm0710``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.live.live_verdict import RATE_TOLERANCE
from pytest_eagle3.probes.run import env_variable, find_engine_python
from tests.conftest import validate_report
from tests.reference_cases import EXAMPLES
from tests.test_live_vllm import RUN_MARKER, findings, gap, leftovers

pytest.importorskip("transformers", reason="the reference target run needs transformers (pip install -e '.[test]')")

pytestmark = [pytest.mark.engine("mlx-vlm"), pytest.mark.slow]
ENGINE = "mlx-vlm"
SCRIPT = Path(__file__).resolve().parents[1] / "pytest_eagle3" / "live" / "mlx_generate.py"
STEPS = 3
NEW_TOKENS = 64
DEMO_TARGET = EXAMPLES / "demo-target"
DEMO_DRAFT = EXAMPLES / "demo-draft"
DEMO_PROMPTS = [[3], [68], [133], [198]]
TARGET = EXAMPLES / "qwen35-target"
GOOD = "qwen35-draft"
ABSOLUTE = "qwen35-draft-absolute-d2t"
DRAFTS = (GOOD, "qwen35-draft-outputof", ABSOLUTE)
#: Served, but not as trained: the deviation engine.acceptance names for mlx-vlm 0.7.10 (its words).
DROPS = {
    # trained on the outputs of [2, 4, 5]; mlx-vlm captures the outputs of [1, 3, 4] (capture_layer_ids = id - 1)
    "qwen35-draft-outputof": "aux layers: layer inputs [2, 4, 5]",
    ABSOLUTE: "d2t read as offsets",  # draft_ids + d2t[draft_ids] (drafters/eagle3/eagle3.py _draft_to_target)
}
#: Token-id prompts, one per line (--eagle3-prompts): the prediction and mlx-vlm read the same file.
PROMPTS = [[(5 + 67 * i) % 1024] for i in range(16)]


@pytest.fixture(scope="module")
def mlx_python() -> str:
    python = find_engine_python(ENGINE)
    if python is None:
        pytest.skip(f"mlx-vlm is not importable here: run tox -e mlxvlm0710 (or set {env_variable(ENGINE)})")
    return python


def generate(python: str, work: Path, target: Path, draft: Path | None, prompts: list[list[int]],
             new_tokens: int, **options: Any) -> dict[str, Any]:
    """One run of mlx-vlm's loop over ``prompts`` (the target alone when ``draft`` is None); ``options``: more
    request keys (``prefill_step_size``)."""
    request = work / f"request-{target.name}-{draft.name if draft else 'alone'}-{len(options)}.json"
    request.write_text(json.dumps({"target": str(target), "draft": str(draft) if draft else None,
                                   "prompts": prompts, "steps": STEPS, "max_tokens": new_tokens, **options}))
    done = subprocess.run([python, str(SCRIPT), str(request)], capture_output=True, text=True, timeout=900,
                          check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def absolute_d2t_copy(source: Path, out: Path) -> Path:
    """``source`` with ``d2t`` rewritten as absolute target ids (a real safetensors file)."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, out)
    tensors = load_file(out / "model.safetensors")
    tensors["d2t"] = tensors["d2t"] + torch.arange(tensors["d2t"].numel())
    save_file(tensors, out / "model.safetensors")
    return out


def live_acceptance(result: dict[str, Any], steps: int = STEPS) -> Any:
    """Acceptance from mlx-vlm's own per-round record, as the live fixture reads it (generate_loop)."""
    from pytest_eagle3.live.generate_loop import rounds_acceptance

    return rounds_acceptance(result["accept_lens"], steps, result["version"])


@pytest.fixture(scope="module")
def live(mlx_python: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per draft: mlx-vlm's run, its acceptance, the plugin's prediction for that mlx-vlm, and the findings the
    plugin's live judgement gives; plus the target alone."""
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.live.expected import expected_acceptance, live_prompts
    from pytest_eagle3.live.live_verdict import acceptance_findings, greedy_findings
    from pytest_eagle3.reference.defaults import DEFAULT_MAX_LOSS, DEFAULT_MIN_ACCEPTANCE
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    work = tmp_path_factory.mktemp("live-mlx")
    prompts_file = work / "prompts.txt"
    prompts_file.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    prompts = live_prompts(str(TARGET), str(prompts_file))  # the plugin's reading of --eagle3-prompts
    assert prompts == PROMPTS
    paths = {name: EXAMPLES / name for name in DRAFTS if name != ABSOLUTE}
    paths[ABSOLUTE] = absolute_d2t_copy(EXAMPLES / GOOD, work / ABSOLUTE)
    alone = generate(mlx_python, work, TARGET, None, prompts, NEW_TOKENS)
    session = PredictionSession(prompts_path=str(prompts_file))
    runs: dict[str, Any] = {"alone": alone, "prompts": prompts}
    for name, path in paths.items():
        result = generate(mlx_python, work, TARGET, path, prompts, NEW_TOKENS)
        engine = parse_selection(f"{ENGINE}=={result['version']}")[0]
        label = f"mlx-vlm {result['version']}"
        expected = expected_acceptance(predict_acceptance(path, TARGET, engine, session=session), engine)
        acceptance = live_acceptance(result)
        assert result["acceptance"] == {"mean_acceptance_length": round(acceptance.mean_acceptance_length, 4),
                                        "rounds": acceptance.drafts,
                                        "per_position": [round(p, 4) for p in acceptance.per_position]}
        judged = acceptance_findings(acceptance, expected, DEFAULT_MIN_ACCEPTANCE, label, DEFAULT_MAX_LOSS)
        runs[name] = {"result": result, "acceptance": acceptance, "expected": expected,
                      "findings": {f.code: f.summary for f in judged},
                      "greedy": greedy_findings(result["tokens"], alone["tokens"], label)}
    return runs


def test_mlx_vlm_alone_decodes_the_qwen35_target_as_transformers_does(live: dict[str, Any]) -> None:
    """mlx-vlm loads the target as transformers wrote it and decodes it greedily to the reference's tokens."""
    import torch

    from pytest_eagle3.reference.acceptance import greedy_continue, load_target

    assert live["alone"]["error"] is None, live["alone"]
    target = load_target(str(TARGET))
    with torch.no_grad():
        expected = [greedy_continue(target.model, torch.tensor([p]), NEW_TOKENS)[0, len(p):].tolist()
                    for p in live["prompts"]]
    assert live["alone"]["tokens"] == expected


@pytest.mark.parametrize("name", DRAFTS)
def test_mlx_vlm_counts_every_round_once(live: dict[str, Any], name: str) -> None:
    """The drafter's per-round record and its lifetime counters agree; each request drafts 3 tokens a round and,
    at its end, only the tokens it has left (speculative/eagle3.py _eagle3_next_block_size); greedy output with the
    draft is the target's alone."""
    result = live[name]["result"]
    assert result["error"] is None, result
    accepted = [a for request in result["accept_lens"] for a in request]
    drafted = [d for request in result["draft_lens"] for d in request]
    assert (len(accepted), sum(accepted), sum(drafted)) == (result["rounds"], result["accepted"], result["drafted"])
    for tokens, request, lens in zip(result["tokens"], result["accept_lens"], result["draft_lens"]):
        assert len(tokens) == NEW_TOKENS
        emitted = 1
        for got, count in zip(request, lens):
            assert count == min(STEPS, NEW_TOKENS - emitted) and 0 <= got <= count
            emitted += min(got + 1, NEW_TOKENS - emitted)
        assert emitted == NEW_TOKENS
    assert live[name]["greedy"] == []


@pytest.mark.parametrize("name", DRAFTS)
def test_live_acceptance_matches_the_prediction(live: dict[str, Any], name: str) -> None:
    """mlx-vlm's own counts within 0.05 per position of engine.acceptance's prediction for the installed mlx-vlm
    (the plugin's live judgement finds no gap)."""
    found = live[name]
    assert "live-prediction-gap" not in found["findings"], found["findings"]
    assert list(found["acceptance"].per_position) == pytest.approx(list(found["expected"].per_position),
                                                                   abs=RATE_TOLERANCE)


@pytest.mark.parametrize("name", DRAFTS)
def test_the_drop_is_the_one_predicted(live: dict[str, Any], name: str) -> None:
    """The draft mlx-vlm serves as trained passes the plugin's live judgement; the ones it feeds wrongly fail it,
    naming the deviation the prediction names, with the live figure on the line."""
    found = live[name]
    acceptance, expected = found["acceptance"], found["expected"]
    if name not in DROPS:
        assert found["findings"] == {}
        assert expected.as_trained - acceptance.mean_acceptance_length <= 0.1
        return
    summary = found["findings"]["live-loss"]
    assert summary.startswith(f"mlx-vlm {found['result']['version']} reached {acceptance.mean_acceptance_length:.2f}")
    assert f"the drop engine.acceptance predicted: {DROPS[name]}: -" in summary, summary


def test_the_figures(live: dict[str, Any]) -> None:
    """The measured and predicted figures, as docs/live.md records them (-s prints the table)."""
    print("\n| draft | live per position (mlx-vlm accept_lens) | predicted | as trained | gap | findings | rounds | s |")
    for name in DRAFTS:
        found = live[name]
        live_rates, predicted = found["acceptance"].per_position, found["expected"].per_position
        gap = max(abs(a - b) for a, b in zip(live_rates, predicted))
        print(f"| {name} | {[round(p, 4) for p in live_rates]} ({found['acceptance'].mean_acceptance_length:.3f}) | "
              f"{list(predicted)} ({found['expected'].mean_acceptance_length:.3f}) | "
              f"{found['expected'].as_trained:.3f} | {gap:.4f} | {sorted(found['findings'])} | "
              f"{found['result']['rounds']} | {found['result']['seconds']} |")
    assert all(live[name]["acceptance"].drafts > 0 for name in DRAFTS)


def test_the_plan_refuses_the_llama_target() -> None:
    """What the plugin says for mlx-vlm 0.7.10 on the demo pair: the target cannot feed the drafter."""
    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.checkpoint.target import TargetModel
    from pytest_eagle3.engines.plan import REFUSED, load_plan
    from pytest_eagle3.knowledge.selection import parse_selection

    plan = load_plan(Checkpoint.open(DEMO_DRAFT), parse_selection("mlx-vlm==0.7.10")[0], TargetModel.open(DEMO_TARGET))
    refusals = {i.finding.code: i.finding.summary for i in plan.issues if i.kind == REFUSED}
    assert "target-no-capture" in refusals
    assert "cannot capture aux hidden states from target LlamaForCausalLM" in refusals["target-no-capture"]


def test_the_drafter_loop_stops_where_the_plan_says(mlx_python: str, tmp_path: Path) -> None:
    """With the EAGLE-3 drafter on the Llama demo target, mlx-vlm's loop raises before its first round: the Llama
    model returned no hidden states to concatenate (speculative/utils.py run_speculative_rounds), no round counted.
    Alone, it decodes the demo target as transformers does: the refusal is the capture, not the model."""
    import torch

    from pytest_eagle3.reference.acceptance import greedy_continue, load_target

    result = generate(mlx_python, tmp_path, DEMO_TARGET, DEMO_DRAFT, DEMO_PROMPTS, 32)
    assert result["version"] == "0.7.10"
    assert result["error"] is not None and result["error"].startswith("TypeError: concatenate()"), result
    assert result["raised_at"].startswith("mlx_vlm/speculative/utils.py:"), result
    assert (result["rounds"], result["drafted"], result["tokens"]) == (0, 0, [])
    alone = generate(mlx_python, tmp_path, DEMO_TARGET, None, DEMO_PROMPTS, 32)
    target = load_target(str(DEMO_TARGET))
    with torch.no_grad():
        expected = [greedy_continue(target.model, torch.tensor([p]), 32)[0, len(p):].tolist() for p in DEMO_PROMPTS]
    assert alone["error"] is None and alone["tokens"] == expected


#: Prompts of four tokens: mlx-vlm's generate_step prefills them in chunks.
LONGER = [[(5 + 67 * i) % 1024, (100 + 13 * i) % 1024, (300 + 7 * i) % 1024, (9 + 31 * i) % 1024] for i in range(16)]


def test_a_chunked_prefill_seeds_the_first_draft_from_the_first_prompt_position(mlx_python: str,
                                                                                  tmp_path: Path) -> None:
    """A prompt of several tokens: mlx-vlm 0.7.10's generate_step prefills all but the last token in chunks (its
    default prefill_step_size, 2048) and hands the drafter only the last prompt token (generate/ar.py L516) with
    the states of every position, so prefill_from_target_hidden pairs the first bonus token with the FIRST prompt
    position's states and keeps no prompt context (drafters/eagle3/eagle3.py L334-341): the first rounds draft from
    other states. The prediction walks what an unchunked prefill does: mlx-vlm without chunks
    (prefill_step_size=None) counts exactly its rounds; with its default the first rounds of most requests differ,
    which the prediction does not model (here the rates came out 0.01-0.02 higher: the first token's states carry
    this language's mode). One-token prompts, as above, are not chunked."""
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.live.expected import expected_acceptance
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in LONGER))
    whole = generate(mlx_python, tmp_path, TARGET, EXAMPLES / GOOD, LONGER, NEW_TOKENS, prefill_step_size=None)
    chunked = generate(mlx_python, tmp_path, TARGET, EXAMPLES / GOOD, LONGER, NEW_TOKENS)
    engine = parse_selection(f"{ENGINE}=={whole['version']}")[0]
    session = PredictionSession(prompts_path=str(prompts))
    expected = expected_acceptance(predict_acceptance(EXAMPLES / GOOD, TARGET, engine, session=session), engine)
    assert whole["tokens"] == chunked["tokens"]  # the target's greedy output either way
    assert list(live_acceptance(whole).per_position) == pytest.approx(list(expected.per_position), abs=1e-4)
    differ = [i for i, (w, c) in enumerate(zip(whole["accept_lens"], chunked["accept_lens"])) if w != c]
    assert len(differ) >= len(LONGER) // 2, differ
    print(f"\nchunked prefill (mlx-vlm's default): {[round(p, 4) for p in live_acceptance(chunked).per_position]}; "
          f"unchunked: {[round(p, 4) for p in live_acceptance(whole).per_position]}; predicted: "
          f"{list(expected.per_position)}; requests whose rounds differ: {len(differ)} of {len(LONGER)}")


# -- as a user runs it: pytest -m engine --eagle3-engine=mlx-vlm ------------------------------------------------

def user_run(python: str, work: Path, drafts: dict[str, Path], target: Path, prompts: list[list[int]]) -> dict[str, Any]:
    """One ``pytest -m engine --eagle3-engine=mlx-vlm`` run over ``drafts`` (subprocess): its report and output."""
    prompts_file = work / f"prompts-{target.name}.txt"
    prompts_file.write_text("".join(json.dumps(p) + "\n" for p in prompts))
    report = work / f"report-{target.name}.json"
    marker = uuid.uuid4().hex
    argv = [sys.executable, "-m", "pytest", "-m", "engine", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
            *[f"--eagle3-ckpt={path}" for path in drafts.values()], f"--eagle3-target={target}",
            "--eagle3-engine=mlx-vlm", f"--eagle3-mlx-vlm-python={python}", f"--eagle3-prompts={prompts_file}",
            f"--eagle3-report={report}"]
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=2400, check=False,
                          env={**os.environ, RUN_MARKER: marker})
    assert report.exists(), f"no report (rc {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    data = json.loads(report.read_text())
    validate_report(data)
    by_path = {c["path"]: c for c in data["checkpoints"]}
    entries = {}
    for name, path in drafts.items():
        entry = by_path[str(path)]
        engine = next(e for e in entry["engines"] if e["engine"] == ENGINE)
        entries[name] = {c["id"]: c for c in engine["contracts"]} | {"_properties": entry["properties"]}
    return {"contracts": entries, "stdout": done.stdout, "returncode": done.returncode, "marker": marker}


@pytest.fixture(scope="module")
def user_runs(mlx_python: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled Qwen3.5 pair and its broken variants; and the Llama demo pair, which mlx-vlm cannot feed."""
    work = tmp_path_factory.mktemp("live-mlx-user")
    drafts = {name: EXAMPLES / name for name in DRAFTS if name != ABSOLUTE}
    drafts[ABSOLUTE] = absolute_d2t_copy(EXAMPLES / GOOD, work / ABSOLUTE)
    return {"qwen35": user_run(mlx_python, work, drafts, TARGET, PROMPTS),
            "demo": user_run(mlx_python, work, {"demo-draft": DEMO_DRAFT}, DEMO_TARGET, DEMO_PROMPTS)}


@pytest.mark.parametrize("name", DRAFTS)
def test_live_acceptance_as_a_user_reads_it(user_runs: dict[str, Any], name: str) -> None:
    """``live.acceptance`` passes the draft mlx-vlm serves as trained, with the live and predicted figures on its
    line, and fails the ones it feeds wrongly, naming the drop the prediction names; live and predicted agree per
    position either way, and greedy output is the target's alone."""
    run = user_runs["qwen35"]
    found = run["contracts"][name]
    props, acceptance = found["_properties"], found["live.acceptance"]
    assert gap(props) <= RATE_TOLERANCE, props
    assert found["live.launch"]["outcome"] == "passed" and found["live.greedy"]["outcome"] == "passed"
    assert "mlx_generate.py" in props["live_command"] and "--steps 3" in props["live_command"]
    if name not in DROPS:
        assert acceptance["outcome"] == "passed", acceptance["message"]
        assert f"mlx-vlm 0.7.10 reached {props['live_mean_acceptance_length']:.2f}" in acceptance["message"]
        assert f"predicted {props['live_expected_mean_acceptance_length']:.2f}" in acceptance["message"]
        return
    summary = findings(acceptance)["live-loss"]
    assert acceptance["outcome"] == "failed" and summary.startswith(
        f"mlx-vlm 0.7.10 reached {props['live_mean_acceptance_length']:.2f}"), summary
    assert f"the drop engine.acceptance predicted: {DROPS[name]}: -" in summary, summary
    assert f"live.acceptance [live-loss]: {summary}" in run["stdout"]  # what the user reads


def test_a_target_mlx_vlm_cannot_feed_fails_live_in_its_own_words(user_runs: dict[str, Any]) -> None:
    """The Llama demo target: mlx-vlm's loop raises before its first round; live.acceptance and live.greedy fail
    with where mlx-vlm raised, not a traceback of the plugin's; no process is left of either run."""
    found = user_runs["demo"]["contracts"]["demo-draft"]
    for contract in ("live.acceptance", "live.greedy"):
        message = found[contract]["message"]
        assert found[contract]["outcome"] == "failed", message
        assert "mlx-vlm 0.7.10's loop raised TypeError: concatenate()" in message, message
        assert "at mlx_vlm/speculative/utils.py:" in message and "Traceback" not in message, message
    assert all(leftovers(run["marker"]) == [] for run in user_runs.values())
