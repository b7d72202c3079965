"""Knowledge keyed by the engine's draft class: every class every scanned release registers has its own rows
(pytest_eagle3/scanners/draft_classes.py over the released source), the rules read the rows of the class the draft builds,
never another class's, and a module a class loads but never applies is a loss with its source."""

from __future__ import annotations

import importlib.util
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.engines.facts import fact_sheet
from pytest_eagle3.engines.layers import class_flags
from pytest_eagle3.knowledge import draft_class_rows as rows
from pytest_eagle3.knowledge import draft_classes
from pytest_eagle3.knowledge.releases import RELEASES, EngineVersion
from pytest_eagle3.knowledge.snapshot import snapshot_of
from pytest_eagle3.probes.cases import MLA_CONFIG, ProbeCase, write_all, write_case
from pytest_eagle3.testing.synth import SPECFORGE, SynthSpec
from pytest_eagle3.verdict.judge import judged_plan

#: Architectures an engine reaches its class with by another path than the registry the scan reads (LMDeploy's
#: config builder rewrites LlamaForCausalLM: configurations/llama.py), and vLLM 0.8.5, which picks its class by
#: the method: draft_classes.py rows that no registry line backs.
NOT_IN_THE_SCANNED_REGISTRY = {("lmdeploy", "LlamaForCausalLM")}


@pytest.mark.parametrize("engine", rows.SCANNED)
def test_every_release_of_the_engine_was_scanned(engine: str) -> None:
    """The scan read every release in RELEASES (patch releases too), and nothing else."""
    assert list(rows.releases(engine)) == [r for r in RELEASES[engine]], \
        f"{engine}: rerun pytest_eagle3/scanners/draft_classes.py over every release in RELEASES"


@pytest.mark.parametrize("engine", rows.SCANNED)
def test_every_registered_class_has_its_own_rows_in_every_release(engine: str) -> None:
    """A release that registers a draft class the rules have no rows for fails here: every behaviour of every class
    each release registers has a row from that class's own source, and the class has its hand record (family,
    attention, fused tensors) in draft_classes.CLASSES."""
    missing = []
    for release in rows.releases(engine):
        for arch, klass in rows.registered_at(engine, Version(release)).items():
            if (engine, klass) not in draft_classes.CLASSES:
                missing.append(f"{release} {arch} -> {klass}: no draft_classes.CLASSES entry")
            for behaviour in rows.BEHAVIOURS:
                row = rows.class_row(engine, Version(release), klass, behaviour)
                if row is None:
                    missing.append(f"{release} {klass}: no {behaviour} row")
                elif f":{klass} " not in row.source:
                    missing.append(f"{release} {klass}: the {behaviour} row was read in another class ({row.source})")
    assert not missing, missing[:20]


@pytest.mark.parametrize("engine", [e for e in rows.SCANNED if e not in draft_classes.SPECULATORS_CLASS])
def test_the_registry_rows_start_where_the_source_registers(engine: str) -> None:
    """The hand-read registry (draft_classes.REGISTRY, with its commentary sources) agrees with the scan (mlx-vlm
    builds its one class from speculators_model_type, no registry: draft_classes.SPECULATORS_CLASS): each
    architecture maps to the scanned class from the first release whose registry lists it, and every architecture a
    scanned registry lists has a row."""
    scanned = rows.registered(engine)
    wrong = []
    for arch, runs in scanned.items():
        table = draft_classes.REGISTRY.get((engine, arch))
        if table is None:
            wrong.append(f"{arch}: registered from {runs[0][0]} ({runs[0][2]}), no REGISTRY row")
            continue
        first = table.rows_of(engine)[0]
        if Version(first.since) != Version(runs[0][0]) and not (engine == "vllm" and first.since == "0.8.5"):
            wrong.append(f"{arch}: REGISTRY from {first.since}, the source registers it from {runs[0][0]}")
        for release in rows.releases(engine):
            found = draft_classes.draft_class(engine, Version(release), arch)
            expect = rows.registered_at(engine, Version(release)).get(arch)
            if expect is not None and (found is None or found.name != expect):
                wrong.append(f"{arch} at {release}: REGISTRY gives {found and found.name}, the source {expect}")
    for (eng, arch) in draft_classes.REGISTRY:
        if eng == engine and arch not in scanned and (eng, arch) not in NOT_IN_THE_SCANNED_REGISTRY:
            wrong.append(f"{arch}: a REGISTRY row no scanned registry lists")
    assert not wrong, wrong


def _flag_cases() -> list[tuple[str, str, str]]:
    return [(engine, klass, flag) for engine in rows.SCANNED for klass in rows.classes(engine)
            for flag in rows.NORM_FLAGS]


@pytest.mark.parametrize(("engine", "klass", "flag"), _flag_cases())
def test_the_rules_read_the_row_of_the_class_the_draft_builds(engine: str, klass: str, flag: str,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every release the class exists in: the norm flag the plan resolves comes from that class's own row (its
    range, its source), so a boundary read in another class of the release cannot reach it."""
    ckpt = _specforge(tmp_path_factory)
    for release in rows.releases(engine):
        version = Version(release)
        if klass not in rows.registered_at(engine, version).values():
            continue
        prof = snapshot_of(EngineVersion(engine, version))
        resolved = class_flags(fact_sheet(ckpt, prof, None), prof, klass)
        own = rows.class_row(engine, version, klass, flag)
        assert own is not None and resolved.rows[flag] is own, (release, klass, flag)


_CKPT: dict[str, Checkpoint] = {}


def _specforge(factory: pytest.TempPathFactory) -> Checkpoint:
    if "specforge" not in _CKPT:
        _, drafts = write_all(factory.mktemp("specforge"), ("specforge",))
        _CKPT["specforge"] = Checkpoint.open(drafts["specforge"])
    return _CKPT["specforge"]


def test_the_mla_classes_have_their_own_boundaries() -> None:
    """The facts the scan read in each class's own file, where the Llama class of the same release differs."""
    def value(engine: str, release: str, klass: str, behaviour: str) -> Any:
        row = rows.class_row(engine, Version(release), klass, behaviour)
        assert row is not None
        return row.value
    # SGLang: kimi_k25_eagle3.py gains fc_norm / norm_output in 0.5.13, llama_eagle3.py has them from 0.5.12
    assert value("sglang", "0.5.12", "LlamaForCausalLMEagle3", "fc_norm") == "read"
    assert value("sglang", "0.5.12", "Eagle3DeepseekV2ForCausalLM", "fc_norm") == "not-read"
    assert value("sglang", "0.5.13", "Eagle3DeepseekV2ForCausalLM", "norm_output") == "read"
    # no input_norm in any MLA class (llama_eagle3.py: SGLang 0.5.17, vLLM 0.18.0)
    assert value("sglang", "0.5.23", "Eagle3DeepseekV2ForCausalLM", "norm_before_fc") == "not-read"
    assert value("vllm", "0.33.0", "Eagle3DeepseekV2ForCausalLM", "norm_before_fc") == "not-read"
    assert value("vllm", "0.33.0", "Eagle3LlamaForCausalLM", "norm_before_fc") == "read"
    # vLLM 0.22: deepseek_eagle3.py builds fc_norm (its weights load) and combine_hidden_states only calls fc
    assert value("vllm", "0.22.0", "Eagle3DeepseekV2ForCausalLM", "fc_norm") == "loaded-not-applied"
    assert value("vllm", "0.22.0", "Eagle3DeepseekV2ForCausalLM", "unreached") == ("model.fc_norm.*",)
    assert value("vllm", "0.23.0", "Eagle3DeepseekV2ForCausalLM", "fc_norm") == "read"
    # a tensor no parameter has: deepseek_eagle3.py's model loader skips it (0.18-0.24) where llama_eagle3.py's
    # raises KeyError; from 0.25 both hand it to AutoWeightsLoader
    assert value("vllm", "0.19.0", "Eagle3DeepseekV2ForCausalLM", "unknown_key") == "skipped"
    assert value("vllm", "0.19.0", "Eagle3LlamaForCausalLM", "unknown_key") == "raises"
    assert value("vllm", "0.25.0", "Eagle3DeepseekV2ForCausalLM", "unknown_key") == "engine-loader"


def _mla_draft(root: Path, **config: Any) -> Path:
    case = ProbeCase("mla-flags", "MLA draft with norm flags", SynthSpec(producer=SPECFORGE),
                     config={"architectures": ["Eagle3DeepseekV2ForCausalLM"], **MLA_CONFIG, **config},
                     extra_tensors=("mla", *(("fc_norm",) if config.get("fc_norm") else ()),
                                    *(("input_norm",) if config.get("norm_before_fc") else ())))
    return write_case(case, root / "mla-flags")


def _norm_findings(ckpt: Checkpoint, spec: str) -> list[tuple[str, str, str]]:
    plan = judged_plan(ckpt, EngineVersion("vllm" if spec.startswith("vllm") else "sglang",
                                           Version(spec.partition("==")[2])))
    return [(i.finding.code, i.finding.summary,
             " ".join((*i.finding.details, *(e.obtained for e in i.finding.evidence), i.finding.fix)))
            for i in plan.issues if i.area == "norms"]


@pytest.mark.parametrize(("spec", "code", "words"), [
    ("sglang==0.5.12", "norm-flag", "not read by Eagle3DeepseekV2ForCausalLM"),
    ("sglang==0.5.13", None, ""),
    ("vllm==0.21.0", "norm-flag", "not read by Eagle3DeepseekV2ForCausalLM"),
    ("vllm==0.22.0", "loaded-not-applied", "loaded, not applied"),
    ("vllm==0.23.0", None, ""),
])
def test_an_mla_draft_trained_with_fc_norm_is_judged_by_its_own_class(tmp_path: Path, spec: str, code: str | None,
                                                                      words: str) -> None:
    """The Llama class of SGLang 0.5.12 and vLLM 0.22.0 applies fc_norm; the MLA class does not (SGLang 0.5.12:
    not built; vLLM 0.22: built and loaded, never applied). The finding cites the MLA class's own row."""
    ckpt = Checkpoint.open(_mla_draft(tmp_path, fc_norm=True))
    found = [f for f in _norm_findings(ckpt, spec) if "fc_norm" in f[1]]
    if code is None:
        assert found == []
        return
    (finding,) = found
    assert finding[0] == code
    text = finding[1] + " " + finding[2]
    assert words in text and "Eagle3DeepseekV2ForCausalLM" in finding[2] and "scanners/draft_classes.py" in finding[2]


def test_a_llama_draft_with_fc_norm_on_the_same_release_passes(tmp_path: Path) -> None:
    _, drafts = write_all(tmp_path, ("specforge-norm-flags",))
    ckpt = Checkpoint.open(drafts["specforge-norm-flags"])
    assert [f for f in _norm_findings(ckpt, "sglang==0.5.12") if "fc_norm" in f[1]] == []


def test_the_contract_run_names_the_class_and_the_release(run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """What the user sees: engine.norms fails on vLLM 0.22.0 for the MLA draft with a loaded-not-applied finding and
    the release that applies it as the fix; 0.23.0 passes the norms contract."""
    draft = _mla_draft(tmp_path, fc_norm=True)
    run = run_contracts([draft], "--eagle3-engine=vllm==0.22.0,vllm==0.23.0")
    bad = run.engine_outcomes(draft, "vllm==0.22.0")["engine.norms"]
    assert bad[0] == "failed" and "loaded, not applied" in bad[1] and "fc_norm" in bad[1]
    assert run.engine_outcomes(draft, "vllm==0.23.0")["engine.norms"][0] == "passed"


@pytest.mark.parametrize(("version", "outcome"), [("0.19.0", "dropped"), ("0.23.0", None)])
def test_fc_norm_weights_an_mla_class_does_not_build_are_dropped_by_its_own_loader(
        run_contracts: Callable[..., Any], tmp_path: Path, version: str, outcome: str | None) -> None:
    """vLLM 0.19.0 deepseek_eagle3.py builds no fc_norm and its model loader skips a name without a parameter
    ('if name not in params_dict: continue'): engine.keys fails, the tensors dropped, citing the MLA class's row,
    and the fix is a release that applies fc_norm, not a rename (the Llama class of the release raises KeyError
    instead). 0.23.0 builds and loads them."""
    draft = _mla_draft(tmp_path, fc_norm=True)
    run = run_contracts([draft], f"--eagle3-engine=vllm=={version}")
    keys = run.engine_outcomes(draft, f"vllm=={version}")["engine.keys"]
    if outcome is None:
        assert keys[0] == "passed", keys
        return
    assert keys[0] == "failed" and "[dropped]" in keys[1] and "fc_norm.0.weight" in keys[1], keys
    (issue,) = [i for i in judged_plan(Checkpoint.open(draft), EngineVersion("vllm", Version(version))).issues
                if i.area == "keys"]
    assert "builds no fc_norm" in issue.finding.summary and "rename" not in issue.finding.fix
    assert "engine.norms" in issue.finding.fix
    assert any("deepseek_eagle3.py:Eagle3DeepseekV2ForCausalLM" in d for d in issue.finding.details)


def test_an_mla_draft_with_input_norm_is_refused_where_its_class_has_none(tmp_path: Path) -> None:
    """vLLM 0.33 deepseek_eagle3.py builds no input_norm and its loader skips nothing for it: input_norm.weight has no
    parameter and AutoWeightsLoader raises; the Llama class of the release reads norm_before_fc."""
    ckpt = Checkpoint.open(_mla_draft(tmp_path, norm_before_fc=True))
    plan = judged_plan(ckpt, EngineVersion("vllm", Version("0.33.0")))
    keys = [i for i in plan.issues if i.area == "keys" and i.kind == "refused"]
    assert keys and any("input_norm.weight" in " ".join(e.obtained + e.key for e in i.finding.evidence) or
                        "input_norm" in i.finding.summary for i in keys)
    assert any("norm_before_fc" in i.finding.summary for i in plan.issues if i.area == "norms")


# ---------------------------------------------------------------- the scanner on literal excerpts
@pytest.fixture(scope="module")
def scanner() -> ModuleType:
    return importlib.import_module("pytest_eagle3.scanners.draft_classes")


#: vLLM 0.22.0 deepseek_eagle3.py, trimmed: fc_norm built, combine_hidden_states calls fc alone.
VLLM_DEEPSEEK_0_22 = '''
import torch.nn as nn
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import ReplicatedLinear


class DeepseekV2Eagle3Model(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.fc = ReplicatedLinear(3, 1)
        use_fc_norm = getattr(self.config, "fc_norm", False)
        if use_fc_norm:
            self.fc_norm = nn.ModuleList([RMSNorm(1) for _ in range(3)])
        else:
            self.fc_norm = None
        self.norm_output = getattr(self.config, "norm_output", False)
        self.norm = RMSNorm(1)

    def forward(self, input_ids, positions, hidden_states):
        hidden_states, hidden_prenorm = self.norm(hidden_states, None)
        aux = hidden_states if self.norm_output else hidden_prenorm
        return hidden_states, aux


class Eagle3DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        nn.Module.__init__(self)
        self.model = DeepseekV2Eagle3Model(vllm_config=vllm_config)

    def forward(self, input_ids, positions, hidden_states):
        return self.model(input_ids, positions, hidden_states)

    def combine_hidden_states(self, hidden_states):
        return self.model.fc(hidden_states)
'''
#: The same class as vLLM 0.23.0 has it: combine_hidden_states applies each fc_norm to its chunk.
VLLM_DEEPSEEK_0_23 = VLLM_DEEPSEEK_0_22.replace('''    def combine_hidden_states(self, hidden_states):
        return self.model.fc(hidden_states)''', '''    def combine_hidden_states(self, hidden_states):
        if self.model.fc_norm is not None:
            chunks = hidden_states.chunk(3, dim=-1)
            hidden_states = torch.cat([norm(c) for norm, c in zip(self.model.fc_norm, chunks)], dim=-1)
        return self.model.fc(hidden_states)''')
REGISTRY = '''
_SPECULATIVE_DECODING_MODELS = {
    "Eagle3DeepseekV3ForCausalLM": ("deepseek_eagle3", "Eagle3DeepseekV2ForCausalLM"),
    "DeepSeekMTPModel": ("deepseek_mtp", "DeepSeekMTP"),
}
'''


def _release(root: Path, version: str, source: str) -> Path:
    models = root / f"vllm-{version}" / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "deepseek_eagle3.py").write_text(textwrap.dedent(source))
    (models / "registry.py").write_text(REGISTRY)
    return root / f"vllm-{version}"


def test_the_scanner_finds_a_module_loaded_and_never_applied(scanner: ModuleType, tmp_path: Path) -> None:
    archs, scans = scanner.scan_release("vllm", _release(tmp_path, "0.22.0", VLLM_DEEPSEEK_0_22))
    assert archs == {"Eagle3DeepseekV3ForCausalLM": "Eagle3DeepseekV2ForCausalLM"}  # an alias; the MTP class is not EAGLE-3
    values = scans["Eagle3DeepseekV2ForCausalLM"].values
    assert values["fc_norm"] == "loaded-not-applied" and values["unreached"] == ("model.fc_norm.*",)
    assert values["norm_output"] == "read" and values["norm_before_fc"] == "not-read"
    _, scans = scanner.scan_release("vllm", _release(tmp_path, "0.23.0", VLLM_DEEPSEEK_0_23))
    values = scans["Eagle3DeepseekV2ForCausalLM"].values
    assert values["fc_norm"] == "read" and values["fc_norm_fields"] == ("fc_norm",) and values["unreached"] == ()


#: The plain-name path of three loaders, as vLLM 0.19.0 deepseek_eagle3.py / llama_eagle3.py and SGLang 0.5.23
#: llama_eagle3.py write it (trimmed); "auto": vLLM 0.25.0's AutoWeightsLoader.
LOADERS = {
    "skipped": """
for param_name, weight_name, shard_id in stacked_params_mapping:
    param = params_dict[name.replace(weight_name, param_name)]
    break
else:
    if name not in params_dict:
        continue
    param = params_dict[name]
""",
    "raises": """
for param_name, weight_name, shard_id in stacked_params_mapping:
    param = params_dict[name.replace(weight_name, param_name)]
    break
else:
    param = params_dict[name]
""",
    "guarded": """
for param_name, weight_name, shard_id in stacked_params_mapping:
    break
else:
    param_name = name if name in params_dict else f"model.{name}"
    if param_name in params_dict:
        param = params_dict[param_name]
""",
}
FORWARD = "    def forward(self, input_ids, positions, hidden_states):\n        hidden_states, hidden_prenorm"


@pytest.mark.parametrize(("body", "expected"), [("skipped", "skipped"), ("raises", "raises"), ("guarded", "skipped"),
                                                 ("auto", "engine-loader")])
def test_the_scanner_reads_what_a_loader_does_with_an_unknown_name(scanner: ModuleType, tmp_path: Path, body: str,
                                                                   expected: str) -> None:
    if body == "auto":
        loader = "        return AutoWeightsLoader(self).load_weights(weights)\n"
    else:
        loader = ("        params_dict = dict(self.named_parameters())\n        for name, w in weights:\n"
                  + textwrap.indent(LOADERS[body].strip("\n"), " " * 12) + "\n")
    source = VLLM_DEEPSEEK_0_22.replace(FORWARD, f"    def load_weights(self, weights):\n{loader}\n{FORWARD}")
    assert "def load_weights" in source
    _, scans = scanner.scan_release("vllm", _release(tmp_path, "0.19.0", source))
    assert scans["Eagle3DeepseekV2ForCausalLM"].values["unknown_key"] == expected


def test_the_scanner_runs_per_class(scanner: ModuleType, tmp_path: Path) -> None:
    """Two releases, one class changing: the runs follow that class's source."""
    roots = [_release(tmp_path, "0.22.0", VLLM_DEEPSEEK_0_22), _release(tmp_path, "0.23.0", VLLM_DEEPSEEK_0_23)]
    read, registered, classes = scanner.scan_engine("vllm", roots)
    assert read == ["0.22.0", "0.23.0"]
    assert registered["Eagle3DeepseekV3ForCausalLM"] == [("0.22.0", "0.23.0", "Eagle3DeepseekV2ForCausalLM",
                                                         "deepseek_eagle3.py:Eagle3DeepseekV2ForCausalLM")]
    runs = classes["Eagle3DeepseekV2ForCausalLM"]["fc_norm"]
    assert [(a, b, v) for a, b, v, _ in runs] == [("0.22.0", "0.22.0", "loaded-not-applied"),
                                                   ("0.23.0", "0.23.0", "read")]
