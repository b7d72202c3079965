"""Field coverage: every config field the engines' EAGLE-3 paths read is classified, and the scanner finds them.

The committed scan (``pytest_eagle3/knowledge/generated/field_scan.json``) comes from ``pytest_eagle3/scanners/fields.py`` over
every release of KNOWN_RANGES; these tests fail when a scanned field is neither modelled nor ruled out,
when a modelled entry names a rule that does not exist, when the scan does not cover the release list,
and when the scanner misses a form of read on a source tree written here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.releases import KNOWN_RANGES
from pytest_eagle3.scanners import field_coverage as fc

SCANNER = [sys.executable, "-m", "pytest_eagle3.scanners.fields"]


def _scanner() -> ModuleType:
    return importlib.import_module("pytest_eagle3.scanners.fields")


def _where(record: dict[str, Any]) -> str:
    ranges = ", ".join(a if a == b else f"{a}..{b}" for a, b in record["releases"])
    return f"{record['reads']} config field {record['field']!r} in releases {ranges}, read at {', '.join(record['where'])}"


def test_every_scanned_field_is_modelled_or_ruled_out() -> None:
    missing = [f"{engine}: {_where(record)}" for engine, record in fc.unclassified()]
    assert not missing, ("fields the engines read that no COVERAGE entry in scanners/field_coverage.py classifies "
                         "(model them with a rule or rule them out with the reason):\n  " + "\n  ".join(missing))


def test_a_field_is_modelled_or_ruled_out_there_is_no_third_status() -> None:
    data = {"releases": {"vllm": ["0.33.0"]}, "fields": {"vllm": [
        {"field": "hidden_size", "reads": "draft", "releases": [["0.33.0", "0.33.0"]], "where": ["a.py:f"]},
        {"field": "rms_norm_eps", "reads": "draft", "releases": [["0.33.0", "0.33.0"]], "where": ["a.py:f"]},
    ]}}
    assert fc.summary("vllm", data) == {"releases": 1, "fields": 2, "unclassified": 0, "modelled": 1, "ruled-out": 1}


def test_an_unknown_field_is_reported_unclassified() -> None:
    data = {"releases": {"vllm": ["0.33.0"]}, "fields": {"vllm": [
        {"field": "hidden_size", "reads": "draft", "releases": [["0.33.0", "0.33.0"]], "where": ["a.py:f"]},
        {"field": "brand_new_field", "reads": "draft", "releases": [["0.33.0", "0.33.0"]], "where": ["b.py:g"]},
    ]}}
    found = list(fc.unclassified(data))
    assert [(engine, record["field"]) for engine, record in found] == [("vllm", "brand_new_field")]
    assert "'brand_new_field' in releases 0.33.0, read at b.py:g" in _where(found[0][1])
    assert fc.summary("vllm", data)["unclassified"] == 1


@pytest.mark.parametrize("entry", [c for c in fc.COVERAGE if c.status is fc.Status.MODELLED],
                         ids=lambda c: f"{c.rule}-{c.fields[0]}")
def test_modelled_entry_names_an_existing_rule(entry: fc.Coverage) -> None:
    assert fc.rule_exists(entry.rule), f"{entry.fields} names {entry.rule}, which does not exist"


def test_rule_names_are_checked() -> None:
    assert fc.rule_exists("behaviour:aux_id_fields") and fc.rule_exists("fact:target_hidden_size")
    assert fc.rule_exists("area:geometry") and fc.rule_exists("producer:rope")
    assert not fc.rule_exists("behaviour:no_such_behaviour") and not fc.rule_exists("area:no_such_area")
    assert not fc.rule_exists("fact:nothing") and not fc.rule_exists("hidden_size")


@pytest.mark.parametrize("entry", fc.COVERAGE, ids=lambda c: f"{c.status}-{c.fields[0]}")
def test_every_entry_is_sourced_and_used(entry: fc.Coverage) -> None:
    assert len(entry.reason) > 30, f"{entry.fields}: give the source (and for a ruling the reason)"
    assert bool(entry.rule) == (entry.status is fc.Status.MODELLED)
    assert set(entry.sides) <= set(fc.SIDES) and set(entry.engines) <= set(KNOWN_RANGES)
    used = [r for e in entry.engines for r in fc.records(e) if entry.covers(e, r["field"], r["reads"])]
    assert used, f"{entry.fields} ({entry.status}) covers no scanned field: drop it or fix the name"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])  # the engines pytest_eagle3/scanners/fields.py reads
def test_the_scan_covers_the_committed_release_list(engine: str) -> None:
    assert fc.scan()["releases"][engine] == list(fc.SCANNED_RELEASES[engine])
    releases = [Version(v) for v in fc.SCANNED_RELEASES[engine]]
    first, last = (Version(v) for v in KNOWN_RANGES[engine])
    assert releases == sorted(releases) and len(set(releases)) == len(releases)
    assert releases[0] == first and releases[-1] == last, f"{engine}: the scan must span {KNOWN_RANGES[engine]}"
    for record in fc.records(engine):
        for a, b in record["releases"]:
            assert a in fc.SCANNED_RELEASES[engine] and b in fc.SCANNED_RELEASES[engine]


SOURCES = os.environ.get("EAGLE3_ENGINE_SOURCES", "")


@pytest.mark.skipif(not SOURCES, reason="EAGLE3_ENGINE_SOURCES (a folder holding vllm/<VERSION>/ and sglang/<VERSION>/, "
                                       "the unpacked releases) is not set")
@pytest.mark.parametrize("engine", sorted(KNOWN_RANGES))
def test_the_committed_scan_is_what_the_scanner_prints(engine: str) -> None:
    roots = [Path(SOURCES) / engine / release for release in fc.SCANNED_RELEASES[engine]]
    missing = [str(r) for r in roots if not r.is_dir()]
    assert not missing, f"releases absent from EAGLE3_ENGINE_SOURCES: {missing}"
    result = _scanner().scan_engine(engine, roots)
    assert result["fields"][engine] == fc.scan()["fields"][engine], (
        "field_scan.json is stale: rerun pytest_eagle3/scanners/fields.py (docs/fields.md)")


DRAFT_FILE = '''
class LlamaModel:
    def __init__(self, vllm_config, config=None):
        if config is None:
            config = vllm_config.model_config.hf_config
        self.width = config.hidden_size
        self.eps = getattr(config, "rms_norm_eps", 1e-6)
        self.ids = config.get("layer_ids_by_get")
        if "norm_flag" in config:
            pass
        eagle_config = getattr(config, "eagle_config", None) or {}
        self.aux = eagle_config.get("eagle_aux_hidden_state_layer_ids")
        self.target_layers = vllm_config.model_config.hf_config.num_hidden_layers


class Eagle3LlamaForCausalLM:
    def __init__(self, vllm_config):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.rows = self.config.draft_vocab_size
        self.config.written_not_read = 1
        self.config.to_dict()
'''
PROPOSER_FILE = '''
class EagleProposer:
    def load_model(self, target_model):
        self.token = self.vllm_config.model_config.hf_config.image_token_index
        draft = self.speculative_config.draft_model_config
        self.length = draft.max_model_len
'''


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_scanner_finds_every_form_of_read(tmp_path: Path) -> None:
    scanner = _scanner()
    old = _tree(tmp_path / "9.0.0", {"vllm/model_executor/models/llama_eagle3.py": DRAFT_FILE,
                                     "vllm/v1/spec_decode/eagle.py": PROPOSER_FILE})
    new = _tree(tmp_path / "9.1.0", {"vllm/model_executor/models/llama_eagle3.py": DRAFT_FILE.replace(
        "self.rows = self.config.draft_vocab_size", "self.rows = 0")})
    result = scanner.scan_engine("vllm", [new, old])
    assert result["releases"]["vllm"] == ["9.0.0", "9.1.0"]
    found = {(r["field"], r["reads"]): r for r in result["fields"]["vllm"]}
    both, first = [["9.0.0", "9.1.0"]], [["9.0.0", "9.0.0"]]
    expected = {
        ("hidden_size", "draft"): both,              # config.X (the parameter, not its `is None` fallback)
        ("rms_norm_eps", "draft"): both,             # getattr(config, "X", default)
        ("layer_ids_by_get", "draft"): both,         # config.get("X")
        ("norm_flag", "draft"): both,                # "X" in config
        ("eagle_config", "draft"): both,             # the sub-config itself
        ("eagle_config.eagle_aux_hidden_state_layer_ids", "draft"): both,  # a field of the sub-config
        ("num_hidden_layers", "target"): both,       # vllm_config.model_config.hf_config: the target's
        ("draft_vocab_size", "draft"): first,        # self.config = ...draft_model_config.hf_config
        ("image_token_index", "target"): first,      # the proposer reads the target's config
    }
    assert {key: found[key]["releases"] for key in expected if key in found} == expected
    assert "vllm/model_executor/models/llama_eagle3.py:LlamaModel.__init__" in found[("hidden_size", "draft")]["where"]
    # writes, method calls and a vLLM ModelConfig bound to a config-like name are not fields
    assert not {f for f, _ in found} & {"written_not_read", "to_dict", "max_model_len"}


def test_scanner_command_line(tmp_path: Path) -> None:
    root = _tree(tmp_path / "sglang" / "0.5.99", {"sglang/srt/models/llama_eagle3.py": '''
        class LlamaForCausalLMEagle3:
            def __init__(self, config):
                self.rows = config.draft_vocab_size
        '''})
    out = subprocess.run([*SCANNER, "sglang", str(root)], capture_output=True, text=True, check=True)
    assert '"field":"draft_vocab_size","reads":"draft","releases":[["0.5.99","0.5.99"]]' in out.stdout
    bad = subprocess.run([*SCANNER, "sglang", str(tmp_path / "absent")], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "not a directory" in bad.stderr and "Traceback" not in bad.stderr
    usage = subprocess.run([*SCANNER, "tgi"], capture_output=True, text=True)
    assert usage.returncode == 2 and "pytest_eagle3.scanners.fields vllm" in usage.stderr
