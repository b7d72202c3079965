"""Quantized drafts never crash a rule: FP8 (e4m3fn / e5m2), ModelOpt FP8 / NVFP4 and compressed-tensors exports
are read without error, scales are scales, packed weights are "not modelled", and no dtype safetensors can store
makes any rule raise."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_eagle3.checkpoint import Checkpoint, CheckpointReadError
from pytest_eagle3.checkpoint.tensorfiles import SAFETENSORS_DTYPES, SUB_BYTE_BITS
from pytest_eagle3.knowledge.selection import parse_selection
from pytest_eagle3.probes.cases import CASES_BY_NAME, write_case
from pytest_eagle3.rules.exports import export_findings
from pytest_eagle3.rules.quantized import NOT_MODELLED, is_scale
from pytest_eagle3.rules.shapes import config_findings, format_findings, shape_findings, shape_unmodelled
from pytest_eagle3.rules.vocab_map import diagnose_vocab_map
from pytest_eagle3.rules.weights import diagnose_finite, diagnose_initialised, scan_weights, unmodelled_findings
from pytest_eagle3.testing import SynthSpec, write_checkpoint
from pytest_eagle3.testing.quantize import QUANTIZATIONS
from pytest_eagle3.verdict.judge import judged_plan

FP8 = SynthSpec(producer="specforge", quantization="fp8")


def _header(path: Path) -> tuple[dict[str, Any], bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _rewrite(src: Path, out: Path, name: str, code: str, payload: Callable[[int], bytes]) -> Path:
    """A copy of ``src`` whose tensor ``name`` has safetensors dtype ``code`` and bytes from ``payload(nbytes)``
    (same shape; the file written by hand, so every code the format knows can be written)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "config.json", out / "config.json")
    header, data = _header(src / "model.safetensors")
    meta = header.pop("__metadata__", None)
    blobs: dict[str, tuple[str, list[int], bytes]] = {}
    for key, info in header.items():
        begin, end = info["data_offsets"]
        blobs[key] = (info["dtype"], info["shape"], data[begin:end])
    dtype, shape, _ = blobs[name]
    numel = 1
    for d in shape:
        numel *= d
    nbytes = -(-numel * SUB_BYTE_BITS[code] // 8) if code in SUB_BYTE_BITS else numel * SAFETENSORS_DTYPES[code][1]
    blobs[name] = (code, shape, payload(nbytes))
    new: dict[str, Any] = {"__metadata__": meta} if meta else {}
    offset, body = 0, b""
    for key, (c, s, blob) in blobs.items():
        new[key] = {"dtype": c, "shape": s, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        body += blob
    text = json.dumps(new).encode()
    text += b" " * (-len(text) % 8)
    (out / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + body)
    return out


def _every_rule(path: Path) -> None:
    """Everything the static contracts call, and the load plan of the newest SGLang and vLLM."""
    ckpt = Checkpoint.open(path)
    health = scan_weights(ckpt)
    diagnose_finite(health, ckpt.format.producer)
    diagnose_initialised(health)
    unmodelled_findings(health)
    config_findings(ckpt)
    format_findings(ckpt)
    shape_findings(ckpt)
    shape_unmodelled(ckpt)
    cfg = ckpt.config
    try:
        d2t = ckpt.read("d2t") if "d2t" in ckpt.tensors else None
        t2d = ckpt.read("t2d") if "t2d" in ckpt.tensors else None
    except CheckpointReadError:
        d2t = t2d = None
    if cfg.vocab_size and cfg.draft_vocab_size:
        diagnose_vocab_map(d2t, t2d, cfg.vocab_size, cfg.draft_vocab_size)
        export_findings(ckpt, cfg.vocab_size, cfg.draft_vocab_size)
    for engine in parse_selection("sglang,vllm"):
        judged_plan(ckpt, engine).describe()


@pytest.mark.parametrize("quantization", QUANTIZATIONS)
def test_quantized_exports_read_without_error(tmp_path: Path, quantization: str) -> None:
    """Every export reads: float8 weights scanned (no finding on a healthy draft), packed ones not modelled."""
    ckpt = Checkpoint.open(write_checkpoint(SynthSpec(producer="specforge", quantization=quantization), tmp_path))
    assert ckpt.problems == []
    health = scan_weights(ckpt)
    assert diagnose_finite(health, ckpt.format.producer) == []
    assert diagnose_initialised(health) == []  # a scalar or per-block constant scale is not "constant weights"
    assert shape_findings(ckpt) == []
    packed = quantization in ("modelopt-nvfp4", "compressed-tensors-w4a16")
    assert [f.code for f in unmodelled_findings(health)] == ([NOT_MODELLED] if packed else [])
    assert [f.code for f in shape_unmodelled(ckpt)] == ([NOT_MODELLED] if packed else [])
    if not packed:
        q = next(h for h in health if h.name.endswith("q_proj.weight"))
        assert q.finite and 0 < q.maximum < 1  # dequantized through weight_scale: the bf16 range, not e4m3's 448


@pytest.mark.parametrize(("quantization", "byte", "nan", "inf"),
                         [("fp8", 0x7F, 1, 0), ("fp8", 0xFF, 1, 0), ("fp8-e5m2", 0x7C, 0, 1), ("fp8-e5m2", 0x7E, 1, 0)])
def test_fp8_nan_and_inf_bit_patterns(tmp_path: Path, quantization: str, byte: int, nan: int, inf: int) -> None:
    """e4m3fn's NaN (S.1111.111; it has no Inf) and e5m2's Inf / NaN are found in the raw bytes and named."""
    good = write_checkpoint(SynthSpec(producer="specforge", quantization=quantization), tmp_path / "good")
    header, data = _header(good / "model.safetensors")
    name = "midlayer.self_attn.q_proj.weight"
    begin, end = header[name]["data_offsets"]
    code = header[name]["dtype"]
    bad = _rewrite(good, tmp_path / "bad", name, code, lambda n: bytes([byte]) + data[begin + 1:end])
    health = scan_weights(Checkpoint.open(bad))
    q = next(h for h in health if h.name == name)
    assert (q.nan, q.inf) == (nan, inf)
    (finding,) = diagnose_finite(health, "specforge")
    assert finding.code == "non-finite" and name in finding.evidence[0].key
    assert f"{nan} NaN, {inf} Inf" in finding.evidence[0].obtained


def test_scales_are_not_weights(tmp_path: Path) -> None:
    """weight_scale / input_scale are scales: no missing or unexpected weight, no 'constant weights'; a zero scale
    zeroes its weight and says so."""
    good = write_checkpoint(FP8, tmp_path / "good")
    ckpt = Checkpoint.open(good)
    assert {n for n in ckpt.tensors if is_scale(n)} >= {"midlayer.self_attn.q_proj.weight_scale",
                                                         "midlayer.self_attn.q_proj.input_scale"}
    name = "midlayer.self_attn.q_proj.weight_scale"
    zero = _rewrite(good, tmp_path / "zero", name, "F32", lambda n: bytes(n))
    (finding,) = diagnose_initialised(scan_weights(Checkpoint.open(zero)))
    assert finding.code == "all-zero-weights" and name in finding.evidence[0].key


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(engine, contract id) -> the contract's JSON entry, for the first checkpoint of a report."""
    (ckpt,) = report["checkpoints"]
    label = lambda e: f"{e['engine']}=={e['version']}" if e["version"] else e["engine"]  # noqa: E731
    return {(label(e), c["id"]): c for e in ckpt["engines"] for c in e["contracts"]}


def test_fp8_draft_runs_every_contract(run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """pytest --eagle3-ckpt=FP8 DRAFT: no traceback, a verdict table; the newest releases' key plan is not
    modelled (the draft's own quantization_config builds its scale parameters); vLLM 0.10.2, which never
    quantizes a draft, refuses it in engine.keys and engine.runtime alike (one rule)."""
    draft = write_checkpoint(FP8, tmp_path / "fp8")
    run = run_contracts([draft], "--eagle3-engine=vllm==0.10.2,vllm==0.33.0,sglang==0.5.23", "-rs")
    out = run.result.stdout.str()
    assert "Traceback" not in out and "NotImplementedError" not in out and "aminmax" not in out
    assert "EAGLE-3 verdict" in out
    rows = _rows(run.report)
    assert rows[("any", "weights.finite")]["outcome"] == "passed"
    assert rows[("any", "weights.initialised")]["outcome"] == "passed"
    assert rows[("any", "config.shapes")]["outcome"] == "passed"
    for engine in ("vllm==0.33.0", "sglang==0.5.23"):
        keys = rows[(engine, "engine.keys")]
        assert keys["outcome"] == "skipped" and "not modelled: the key plan" in keys["message"]
        assert f"decided by probe.load with {engine.replace('==', ' ').replace('vllm', 'vLLM').replace('sglang', 'SGLang')} " \
            "installed" in out
    old = rows[("vllm==0.10.2", "engine.keys")]
    assert old["outcome"] == "failed" and "_scale" in old["message"]
    runtime = rows[("vllm==0.10.2", "engine.runtime")]
    assert runtime["outcome"] == "failed" and "unquantized" in runtime["message"]


def test_fp8_probe_case_plain_and_per_engine(run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """The probe corpus's FP8 draft (fc quantized too, AutoFP8's config): plain ``pytest --eagle3-ckpt`` prints
    verdicts, no traceback; SGLang's plain-Linear fc loses fc's scales (a FAIL naming the rule and the fix), vLLM
    builds fc with the draft's quantization (no key failure)."""
    draft = write_case(CASES_BY_NAME["specforge-fp8"], tmp_path / "fp8")
    plain = run_contracts([draft])
    out = plain.result.stdout.str()
    assert "Traceback" not in out and "EAGLE-3 verdict" in out
    assert _rows(plain.report)[("any", "weights.finite")]["outcome"] == "passed"
    run = run_contracts([draft], "--eagle3-engine=sglang==0.5.23,vllm==0.32.0")
    out, rows = run.result.stdout.str(), _rows(run.report)
    assert "Traceback" not in out
    keys = rows[("sglang==0.5.23", "engine.keys")]
    assert keys["outcome"] == "failed" and "builds fc as a plain torch Linear" in keys["message"]
    assert "fc.weight_scale" in keys["message"] and "ignored layers" in out
    assert rows[("vllm==0.32.0", "engine.keys")]["outcome"] != "failed"


def test_packed_draft_is_not_modelled_not_failed(run_contracts: Callable[..., Any], tmp_path: Path) -> None:
    """An NVFP4 export (uint8 weights): the weight scan and config.shapes say 'not modelled', nothing fails;
    --eagle3-unknown=fail makes it a failure."""
    draft = write_checkpoint(SynthSpec(producer="specforge", quantization="modelopt-nvfp4"), tmp_path / "nvfp4")
    run = run_contracts([draft], "--eagle3-engine=vllm==0.33.0")
    assert run.result.ret == 0
    rows = _rows(run.report)
    for contract in ("weights.finite", "config.shapes"):
        assert rows[("any", contract)]["outcome"] == "skipped"
        assert "not modelled" in rows[("any", contract)]["message"]
    strict = run_contracts([draft], "--eagle3-engine=vllm==0.33.0", "--eagle3-unknown=fail")
    assert strict.result.ret == 1


_NAMES = ("midlayer.self_attn.q_proj.weight", "midlayer.mlp.down_proj.weight", "fc.weight", "lm_head.weight",
          "norm.weight", "midlayer.hidden_norm.weight", "d2t", "t2d")
_CODES = sorted(SAFETENSORS_DTYPES) + sorted(SUB_BYTE_BITS)


@pytest.fixture(scope="module")
def plain_draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(SynthSpec(producer="specforge"), tmp_path_factory.mktemp("plain"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code=st.sampled_from(_CODES), name=st.sampled_from(_NAMES), seed=st.integers(0, 255),
       filler=st.sampled_from(["random", "zeros", "ones-bits"]))
def test_no_rule_raises_on_any_dtype(plain_draft: Path, tmp_path_factory: pytest.TempPathFactory, code: str,
                                     name: str, seed: int, filler: str) -> None:
    """Any tensor of the draft in any dtype safetensors can store, with any bytes: every rule returns."""
    def payload(n: int) -> bytes:
        if filler == "zeros":
            return bytes(n)
        if filler == "ones-bits":
            return b"\xff" * n
        return bytes((seed + 31 * i) % 256 for i in range(n))

    out = _rewrite(plain_draft, tmp_path_factory.mktemp("dtype"), name, code, payload)
    _every_rule(out)


def test_every_code_is_covered() -> None:
    """The property's dtypes are every code safetensors' torch bindings write (and the format's sub-byte ones)."""
    from safetensors.torch import _TYPES

    assert set(_TYPES) <= set(_CODES)
    assert {"F8_E8M0", "F4"} <= set(_CODES)


def test_every_torch_dtype_reads_back_as_written(tmp_path: Path) -> None:
    """Each dtype safetensors' torch bindings write: a file written by safetensors itself is indexed under that
    dtype's code, and the values read back through the checkpoint view are the values written."""
    from safetensors.torch import _TYPES, save_file

    from pytest_eagle3.checkpoint.tensorfiles import index_safetensors, read_safetensors_tensor

    tensors = {}
    for code, dtype in _TYPES.items():
        if code in SUB_BYTE_BITS or dtype == torch.bool:
            continue
        tensors[code.lower()] = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(dtype)
    tensors["bool"] = torch.tensor([[True, False, True], [False, True, False]])
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    index = index_safetensors(path)
    entries = {entry.name: entry for entry in index.entries}
    for name, written in tensors.items():
        entry = entries[name]
        assert SAFETENSORS_DTYPES[entry.dtype][0] == str(written.dtype).removeprefix("torch."), (name, entry.dtype)
        read = read_safetensors_tensor(entry)
        assert read.dtype == written.dtype and read.shape == written.shape, name
        assert torch.equal(read.view(torch.uint8), written.view(torch.uint8)), name
