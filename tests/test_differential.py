"""The differential runs, replayed without any engine: drawn checkpoint variants that the real engines' loaders ran
(``pytest_eagle3/probes/differential.json``, written by ``python benchmarks/differential.py --python ...``), planned
again with today's knowledge and compared fact by fact with what each engine did.

The whole record is replayed by ``python benchmarks/differential.py --replay`` (minutes: every variant is written
and planned); here a fixed sample of it is, and the record's own figures are checked. The variants' fingerprints
tie the record to the generator and the writer: a change to either that alters a recorded checkpoint fails here,
and the record must be run again.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.checkpoint.target import TargetModel
from pytest_eagle3.engines.plan import LoadPlan, load_plan
from pytest_eagle3.knowledge.releases import EngineVersion
from pytest_eagle3.probes.differential import DEFAULT_RECORD, differences, engine_of, load_record, replay, unpacked
from pytest_eagle3.probes.variants import Variant, fingerprint, generate

RECORD = load_record(DEFAULT_RECORD)
#: The agreement the record must keep (variant runs on which plan and engine agree on every fact).
AGREEMENT = 0.995
#: Every SAMPLE-th recorded variant is replayed here.
SAMPLE = 250


def _plan(engine: EngineVersion, draft: Path, target: Path) -> LoadPlan:
    return load_plan(Checkpoint.open(draft), engine, TargetModel.open(target))


def _runs() -> int:
    return sum(len(run["results"]) for run in RECORD["runs"].values())


def _disagreements() -> dict[tuple[str, str], list[str]]:
    return {(key, name): lines for key, run in RECORD["runs"].items()
            for name, lines in run.get("disagreements", {}).items()}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root, targets, written = tmp_path_factory.mktemp("differential"), dict[str, Path](), dict[str, tuple[Path, Path]]()

    def write(name: str) -> tuple[Path, Path]:
        if name not in written:
            written[name] = Variant(RECORD["variants"][name]["params"]).write(root, targets)
        return written[name]

    return write


def test_the_record_covers_thousands_of_variant_runs_over_three_engines() -> None:
    engines = {run["engine"] for run in RECORD["runs"].values() if run["results"]}
    assert len(engines) >= 3, engines
    assert _runs() >= 1000, _runs()
    assert all(name in RECORD["variants"] for run in RECORD["runs"].values() for name in run["results"])


def test_recorded_agreement() -> None:
    runs, disagree = _runs(), len(_disagreements())
    assert (runs - disagree) / runs >= AGREEMENT, f"agreement {runs - disagree}/{runs}"


def test_a_sample_replays_as_recorded(folders: Any) -> None:
    """Today's plans on every SAMPLE-th variant find exactly the differences found when it was recorded."""
    names = list(RECORD["variants"])[::SAMPLE]
    tallies = replay(RECORD, folders, _plan, names)
    recorded = _disagreements()
    assert sum(t.runs for t in tallies.values()) >= len(names)
    changed = []
    for key, tally in tallies.items():
        now = set(tally.disagreements)
        then = {name for (k, name) in recorded if k == key and name in set(names)}
        changed += [f"{key} {n}: disagrees now" for n in sorted(now - then)]
        changed += [f"{key} {n}: agrees now (re-record it)" for n in sorted(then - now)]
    assert not changed, "\n".join(changed)


def test_recorded_variants_are_what_the_writer_makes(folders: Any) -> None:
    """Each sampled variant's parameters still write the checkpoint and target that the engines ran."""
    for name in list(RECORD["variants"])[::SAMPLE]:
        entry = RECORD["variants"][name]
        assert Variant(entry["params"]).name == name
        assert fingerprint(entry["params"], *folders(name)) == entry["fingerprint"], name


def test_the_generator_still_draws_the_recorded_variants() -> None:
    """The seeded draw's first variants are the record's first (a draw of any count is a prefix of a longer one).
    Hypothesis 6.155.2 and 6.170.17 draw the same; a release that draws otherwise fails here, naming both."""
    first = list(RECORD["variants"].values())[:12]
    assert generate(len(first), RECORD["seed"]) == [v["params"] for v in first], (
        f"drawn with hypothesis {RECORD['hypothesis']}, this is {importlib.metadata.version('hypothesis')}: "
        "the generator no longer draws the recorded variants (run them again: benchmarks/differential.py)")


# -- the disagreements, each kept as a test with the engine's exact behaviour ---------------------------------------
#: vLLM builds fc_norm (and input_norm) only when it uses aux hidden states, and drops only ``fc.*`` otherwise:
#: the fc_norm.* tensors of a draft with ``use_aux_hidden_state: false`` find no module and the load stops.
VLLM_FC_NORM_WITHOUT_AUX = (
    "vllm 0.32.0 model_executor/models/llama_eagle3.py:209-240 builds input_norm and fc_norm inside `if "
    "self.use_aux_hidden_state:`; its load_weights (:462-463) maps away `fc.` only when aux states are off, so "
    "fc_norm.0.weight reaches AutoWeightsLoader: ValueError \"There is no module or parameter named 'fc_norm' in "
    "LlamaModel\". The plan reads fc_norm as read from 0.25.0 and files fc-unused (a loss), not a refusal.")


#: vLLM compares the draft's embed_tokens with the target's in the dtype it serves them in; the plan compares them in
#: the checkpoint's dtype, where a float16 draft's rounded copy of a float32 target's embedding is equal.
VLLM_EMBED_COMPARED_AS_SERVED = (
    "vllm 0.32.0 v1/spec_decode/llm_base_proposer.py:1445-1455 shares the target's embedding only when "
    "torch.equal(target embed_tokens.weight, draft embed_tokens.weight) after loading, both in the served dtype; a "
    "float16 draft's copy of a float32 target's embedding (rounded to float16, then loaded into the served dtype) "
    "differs there, and the draft's own is kept ('draft'). The plan compares in the checkpoint's dtype "
    "(engines/facts.py _same_as_target: theirs.to(mine.dtype)) and says 'target'.")


def _fc_norm_without_aux(key: str, name: str) -> bool:
    params = RECORD["variants"][name]["params"]
    return key.startswith("vllm==") and params["fc_norm"] and params["use_aux_hidden_state"] is False


def _float16_embedding_copy(key: str, name: str) -> bool:
    params = RECORD["variants"][name]["params"]
    lines = RECORD["runs"][key].get("disagreements", {}).get(name, [])
    return (key.startswith("vllm==") and params["dtype"] == "float16" and "random_embed" not in params["extra_tensors"]
            and bool(lines) and all("embed_tokens source: plan 'target', engine 'draft'" in line for line in lines))


#: llama.cpp b11312's converter has no Eagle3MiniMaxM2ForCausalLM: it stops before writing a GGUF.
LLAMACPP_NO_MINIMAX_ARCHITECTURE = (
    "llama.cpp b11312 convert_hf_to_gguf.py looks the draft's architectures up in its model registry and exits "
    "'architecture 'Eagle3MiniMaxM2ForCausalLM' not supported'; the llamacpp plan does not read the draft's "
    "architecture name and says it loads.")
#: Kinds where the probe cannot see what the plan judges (a probe's limit, not the engine's behaviour):
#: (engine key prefix, text of every difference line, the reason).
PROBE_LIMITS: tuple[tuple[str, str, str], ...] = (
    ("llamacpp==", "captured layer inputs", "the converter probe counts as captured only ids below the target's "
     "layer count (probes/llamacpp_converter.py: `i < layers`); the plan reads an id equal to L as the last layer's "
     "output; which the graph captures shows only at runtime (llama-server), not run here"),
    ("mlx-vlm==", "first round, fc on the captured states", "the mlx-vlm probe runs no target: its first round feeds fc "
     "one state per distinct configured id (probes/mlx_loader.py), where the target reaches fewer (ids past its "
     "end): the plan's fc bypass or width for what the target delivers is not what that round sees"),
)


def _minimax_on_llamacpp(key: str, name: str) -> bool:
    params = RECORD["variants"][name]["params"]
    return key.startswith("llamacpp==") and params["architecture"] == "Eagle3MiniMaxM2ForCausalLM"


def _probe_limit(key: str, name: str) -> str | None:
    lines = RECORD["runs"][key].get("disagreements", {}).get(name, [])
    return next((reason for prefix, text, reason in PROBE_LIMITS
                 if key.startswith(prefix) and lines and all(text in line for line in lines)), None)


def _kind_of(key: str, name: str) -> str | None:
    if _fc_norm_without_aux(key, name):
        return VLLM_FC_NORM_WITHOUT_AUX
    if _minimax_on_llamacpp(key, name):
        return LLAMACPP_NO_MINIMAX_ARCHITECTURE
    return VLLM_EMBED_COMPARED_AS_SERVED if _float16_embedding_copy(key, name) else _probe_limit(key, name)


def test_every_disagreement_is_a_known_kind() -> None:
    """Every recorded disagreement is one of the kinds kept below as a test with its reason."""
    unexplained = {f"{k} {n}": lines for (k, n), lines in _disagreements().items() if _kind_of(k, n) is None}
    assert not unexplained, unexplained


def _cases(kind: Any) -> list[tuple[str, str]]:
    return [(key, name) for key, run in RECORD["runs"].items() for name in run["results"] if kind(key, name)]


def test_vllm_refuses_fc_norm_tensors_without_aux_states_as_recorded() -> None:
    """The engine side of the known disagreement: every such variant vLLM ran was refused with that error."""
    cases = _cases(_fc_norm_without_aux)
    if not cases:
        pytest.skip("the record has no vLLM run of a draft with fc_norm and use_aux_hidden_state: false")
    for key, name in cases:
        run = RECORD["runs"][key]
        probe = unpacked(run["results"][name], run["strings"])
        assert probe["outcome"] == "refused" and "no module or parameter named 'fc_norm'" in probe["error"], name


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=VLLM_FC_NORM_WITHOUT_AUX)
def test_the_plan_refuses_fc_norm_tensors_without_aux_states(folders: Any) -> None:
    cases = _cases(_fc_norm_without_aux)
    assert cases
    key, name = cases[0]
    run = RECORD["runs"][key]
    draft, target = folders(name)
    found = differences(_plan(engine_of(key), draft, target), unpacked(run["results"][name], run["strings"]))
    assert not found, found


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=VLLM_EMBED_COMPARED_AS_SERVED)
def test_the_plan_compares_a_float16_embedding_copy_as_served(folders: Any) -> None:
    cases = _cases(_float16_embedding_copy)
    if not cases:
        pytest.skip("the record has no vLLM run of a float16 draft with a copy of the target's embedding that differs")
    key, name = cases[0]
    run = RECORD["runs"][key]
    probe = unpacked(run["results"][name], run["strings"])
    assert probe["embed_tokens"] == "draft"
    draft, target = folders(name)
    found = differences(_plan(engine_of(key), draft, target), probe)
    assert not found, found


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=LLAMACPP_NO_MINIMAX_ARCHITECTURE)
def test_the_llamacpp_plan_reads_the_converters_architectures(folders: Any) -> None:
    cases = [c for c in _cases(_minimax_on_llamacpp) if c in _disagreements()]
    if not cases:
        pytest.skip("the record has no llama.cpp run of an Eagle3MiniMaxM2ForCausalLM draft the plan loads")
    key, name = cases[0]
    run = RECORD["runs"][key]
    probe = unpacked(run["results"][name], run["strings"])
    assert probe["outcome"] == "refused"
    draft, target = folders(name)
    found = differences(_plan(engine_of(key), draft, target), probe)
    assert not found, found
