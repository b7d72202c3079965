"""SGLang has no CPU serving: the feed the prediction simulates for SGLang is checked against what
SGLang's own loader and capture hook do on the trained drafts (the probe, marked ``engine``).

Runs the probe in ``$EAGLE3_SGLANG_PYTHON`` (or this interpreter); skips naming sglang when none
can import it.
"""

from __future__ import annotations

import pytest

from tests.reference_cases import EXAMPLES

pytest.importorskip("transformers", reason="predicted acceptance needs transformers (pip install -e '.[target]')")

#: Drafts in SGLang's own config format (speculators-format drafts are refused by SGLang).
SGLANG_DRAFTS = ("demo-draft-sglang", "trained-inputof-sglang", "trained-inputof-toplevel")


@pytest.mark.engine("sglang")
def test_sglang_feed_is_what_the_probe_sees() -> None:
    from pytest_eagle3.checkpoint import Checkpoint, TargetModel
    from pytest_eagle3.engines.plan import load_plan
    from pytest_eagle3.knowledge.selection import parse_selection
    from pytest_eagle3.probes.run import engine_version, find_engine_python, run_probes
    from pytest_eagle3.reference.draft import ReferenceDraft
    from pytest_eagle3.reference.engine_feed import engine_feed

    python = find_engine_python("sglang")
    if python is None:
        pytest.skip("sglang is not importable (set EAGLE3_SGLANG_PYTHON to a venv with sglang)")
    version = engine_version("sglang", python)
    target = EXAMPLES / "demo-target"
    results = run_probes("sglang", python, [(EXAMPLES / d, target) for d in SGLANG_DRAFTS])
    (engine,) = parse_selection(f"sglang=={version}")
    for draft, probe in zip(SGLANG_DRAFTS, results):
        assert probe.get("outcome") == "loaded", (draft, probe.get("error"))
        ckpt = Checkpoint.open(EXAMPLES / draft)
        plan = load_plan(ckpt, engine, TargetModel.open(target))
        feed = engine_feed(plan, ReferenceDraft.from_checkpoint(ckpt), 8).feed
        assert feed is not None
        assert list(feed.indices) == probe["captured_inputs_of"], draft
        assert (feed.embed, feed.lm_head) == (probe["embed_tokens"], probe["lm_head"]), draft
        for name in ("norm_before_fc", "fc_norm"):
            if isinstance(probe["norms"].get(name), bool):
                assert feed.norm(name) == probe["norms"][name], (draft, name)
