"""Predictions under the engine's own drafting: SGLang's EAGLE tree (``--eagle3-topk``, ``--eagle3-draft-tokens``),
the setting each figure is for, and the error bar from the recorded live comparisons."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.option_table import Resolved
from pytest_eagle3.reference.draft_setting import DraftSetting, max_draft_tokens
from pytest_eagle3.reference.error_bars import DEFAULT_ERROR, comparisons, error_bar
from pytest_eagle3.verdict.setting_values import SettingError
from pytest_eagle3.verdict.settings import build
from tests.reference_cases import EXAMPLES

TARGET = EXAMPLES / "demo-target"


def _settings(**given: str) -> Any:
    return build({f"eagle3_{k}": Resolved((v,), "option") for k, v in given.items()}, {})


# ---------------------------------------------------------------- options

def test_bad_topk_is_a_usage_error_naming_the_flag(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(f"--eagle3-ckpt={EXAMPLES / 'demo-draft'}", "--eagle3-topk=0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--eagle3-topk: '0' is outside [1, 16]" in result.stderr.str()


@pytest.mark.parametrize(("given", "words"), [
    ({"topk": "four"}, "--eagle3-topk: 'four' is not an integer"),
    ({"k": "3", "draft_tokens": "8"}, "--eagle3-draft-tokens: '8' with --eagle3-topk=1 (a chain): SGLang verifies "
                                      "k + 1 = 4 tokens"),
    ({"k": "3", "topk": "4", "draft_tokens": "38"}, "--eagle3-draft-tokens: '38' is outside [2, 37]"),
    ({"k": "3", "topk": "4", "draft_tokens": "1"}, "--eagle3-draft-tokens: '1' is outside [2, 37]"),
])
def test_bad_tree_settings_name_the_flag(given: dict[str, str], words: str) -> None:
    with pytest.raises(SettingError) as raised:
        _settings(**given)
    assert words in str(raised.value)


def test_tree_settings_come_from_the_environment() -> None:
    from pytest_eagle3.option_table import BY_DEST, resolve

    sources = {d: resolve(BY_DEST[d], None, {"EAGLE3_TOPK": "4", "EAGLE3_DRAFT_TOKENS": "8"}, None, None)
               for d in ("eagle3_topk", "eagle3_draft_tokens")}
    settings = build(sources, {})
    assert settings.draft_setting == DraftSetting(3, 4, 8)
    assert settings.draft_setting.words() == "k=3, topk=4, 8 draft tokens"
    assert "--eagle3-topk=4" in settings.to_argv() and "--eagle3-draft-tokens=8" in settings.to_argv()


def test_defaults_are_a_chain() -> None:
    settings = _settings()
    assert (settings.topk, settings.draft_tokens) == (1, None)
    assert settings.draft_setting.words() == "k=3" and settings.draft_setting.verified == 4
    assert _settings(k="3", draft_tokens="4").draft_tokens == 4  # a chain's own value is accepted
    assert max_draft_tokens(3, 4) == 37


# ---------------------------------------------------------------- the live servers draft what is predicted

def test_live_servers_draft_the_setting_predicted() -> None:
    """vLLM serves a chain of k (num_speculative_tokens = k); SGLang the tree the prediction is for."""
    from pytest_eagle3.live.launch import LaunchRequest, build_command

    vllm = build_command(LaunchRequest("vllm", Version("0.32.0"), "python", "T", "D", 8000, steps=5, topk=4,
                                       draft_tokens=8))
    assert '"num_speculative_tokens": 5' in " ".join(vllm.argv)
    sglang = " ".join(build_command(LaunchRequest("sglang", Version("0.5.23"), "python", "T", "D", 8000, steps=3,
                                                  topk=4, draft_tokens=8)).argv)
    assert "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8" in sglang
    chain = " ".join(build_command(LaunchRequest("sglang", Version("0.5.23"), "python", "T", "D", 8000, steps=3)).argv)
    assert "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4" in chain


# ---------------------------------------------------------------- error bars

def test_the_error_bar_is_the_largest_recorded_gap() -> None:
    recorded = [c for c in comparisons() if c.engine == "vllm"]
    assert len(recorded) == 18
    bar = error_bar("vllm", DraftSetting(3))
    assert bar.value == max(c.gap for c in recorded) and 0.13 < bar.value < 0.15
    assert "trained-inputof-sglang" in bar.basis and bar.recorded == 18
    assert error_bar("sglang", DraftSetting(3)).value == DEFAULT_ERROR
    assert "no live comparison recorded for sglang" in error_bar("sglang", DraftSetting(3)).basis
    assert "no live run of a tree" in error_bar("vllm", DraftSetting(3, 4, 8)).basis


def test_the_gaps_are_the_draft_count_only() -> None:
    """Every recorded gap is vLLM's draft count alone: the tokens accepted at each position are the walk's, and
    1 + those tokens over the walk's drafts is the prediction; vLLM's batch counts up to one extra draft per
    request (16 requests) with nothing accepted."""
    for c in comparisons():
        assert c.live_accepted == c.predicted_accepted, c
        assert 1 + sum(c.live_accepted) / c.predicted_drafts == pytest.approx(c.predicted, abs=1e-4), c
        assert 0 <= c.live_drafts - c.predicted_drafts < 16, c
        assert 1 + sum(c.live_accepted) / c.live_drafts == pytest.approx(c.live, abs=1e-4), c


# ---------------------------------------------------------------- the tree on the demo pair

pytest.importorskip("transformers", reason="predicted acceptance needs transformers (pip install -e '.[target]')")


@pytest.fixture(scope="module")
def session() -> Any:
    from pytest_eagle3.reference.predict import PredictionSession

    return PredictionSession(tree=DraftSetting(3, 4, 8))


def test_topk_one_is_the_chain_exactly(session: Any) -> None:
    """SGLang's tree at topk 1 drafts and accepts exactly what the chain does, at every position."""
    import torch

    from pytest_eagle3.checkpoint import Checkpoint
    from pytest_eagle3.reference.acceptance import gold_tokens
    from pytest_eagle3.reference.simulate import built_draft

    predictor = session.predictor(Checkpoint.open(EXAMPLES / "demo-draft-sglang"), str(TARGET))
    sim = predictor.simulator
    draft, embed = built_draft(sim.draft, predictor.training.feed, sim.target)
    steps = sim.steps
    with torch.no_grad():
        for run in sim.target.runs:
            usable = run.sequences.shape[1] - 1 - steps
            aux = torch.cat([run.states[i][:, :usable] for i in predictor.training.feed.indices], dim=-1)
            next_ids = run.sequences[:, 1: usable + 1]
            gold = gold_tokens(run, usable, steps)
            proposals, _ = draft.propose(aux, next_ids, steps, embed)
            chain = torch.cumprod((proposals == gold).long(), dim=-1).sum(-1)
            tree = draft.propose_tree(aux, next_ids, steps, 1, embed)
            assert torch.equal(tree.tokens, proposals)
            assert torch.equal(tree.accepted(gold, steps), chain)


def test_the_tree_is_predicted_for_sglang_and_beats_the_chain(session: Any) -> None:
    from pytest_eagle3.reference.predict import PredictionSession
    from pytest_eagle3.verdict import predict_acceptance

    draft = EXAMPLES / "demo-draft-sglang"
    tree = predict_acceptance(draft, TARGET, "sglang==0.5.23", session=session)
    chain = predict_acceptance(draft, TARGET, "sglang==0.5.23", session=PredictionSession(passes=session.passes))
    assert tree.acceptance is not None and chain.acceptance is not None
    assert tree.setting.words() == "k=3, topk=4, 8 draft tokens" and chain.setting.words() == "k=3"
    assert tree.mean_acceptance_length is not None and chain.mean_acceptance_length is not None
    assert tree.mean_acceptance_length >= chain.mean_acceptance_length
    assert (tree.training.feed.topk, tree.training.feed.draft_tokens) == (4, 8)  # as trained: the same tree
    vllm = predict_acceptance(draft, TARGET, "vllm==0.32.0", session=session)
    assert vllm.setting.words() == "k=3"  # vLLM drafts a chain whatever --eagle3-topk says
    as_json = tree.to_json()
    assert as_json["setting"] == "k=3, topk=4, 8 draft tokens"
    assert as_json["error"]["value"] == DEFAULT_ERROR and "tree" in as_json["error"]["basis"]


def test_a_tree_accepts_the_deepest_kept_path_of_the_continuation() -> None:
    """topk 2, k 2: candidates a(0.6) b(0.4) at depth 1; aa(0.36) ab(0.24) ba(0.2) bb(0.2) at depth 2. Keeping
    three nodes keeps a, b, aa (SGLang's num_draft_tokens 4): a continuation b, a is accepted to depth 1 only
    (ba is not kept); keeping five keeps ba too."""
    import torch

    from pytest_eagle3.reference.draft import DraftTree

    a, b = 10, 11
    tree = DraftTree(tokens=torch.tensor([[[a, b, a, b, a, b]]]), scores=torch.tensor([[[0.6, 0.4, 0.36, 0.24, 0.2,
                                                                                          0.19]]]),
                     parents=torch.tensor([[[-1, -1, 0, 0, 1, 1]]]), depth=torch.tensor([1, 1, 2, 2, 2, 2]))
    assert tree.accepted(torch.tensor([[[b, a]]]), 3).tolist() == [[1]]
    assert tree.accepted(torch.tensor([[[b, a]]]), 5).tolist() == [[2]]
    assert tree.accepted(torch.tensor([[[a, a]]]), 3).tolist() == [[2]]
    assert tree.accepted(torch.tensor([[[12, a]]]), 6).tolist() == [[0]]


def test_more_draft_tokens_never_accept_less(session: Any) -> None:
    import dataclasses

    from pytest_eagle3.checkpoint import Checkpoint

    predictor = session.predictor(Checkpoint.open(EXAMPLES / "demo-draft-sglang"), str(TARGET))
    figures = [predictor.simulator.acceptance(dataclasses.replace(predictor.training.feed, topk=4, draft_tokens=n))
               .mean_acceptance_length for n in (4, 8, 16, 37)]
    assert figures == sorted(figures) and figures[0] < figures[-1]


def test_the_run_says_the_tree_it_predicts_for(pytester: pytest.Pytester) -> None:
    """The README's tree command: SGLang's row predicts the tree and says so, in the table and the JSON."""
    import json

    draft = EXAMPLES / "demo-draft-sglang"
    report = pytester.path / "report.json"
    result = pytester.runpytest(f"--eagle3-ckpt={draft}", f"--eagle3-target={TARGET}", "--eagle3-engine=sglang",
                                "--eagle3-k=3", "--eagle3-topk=4", "--eagle3-draft-tokens=8",
                                f"--eagle3-report={report}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert " ± 0.15 at k=3, topk=4, 8 draft tokens (sim, layers measured)" in result.stdout.str()
    (entry,) = [e for c in json.loads(report.read_text())["checkpoints"] for e in c["engines"] if e["engine"] == "sglang"]
    predicted = entry["predicted_acceptance"]
    assert predicted["setting"] == "k=3, topk=4, 8 draft tokens" and predicted["mean_acceptance_length"] > 3.7
    assert predicted["error"]["value"] == DEFAULT_ERROR
