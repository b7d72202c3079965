"""The checkpoint view on layouts the synthetic writers do not produce."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pytest_eagle3.checkpoint import Checkpoint
from pytest_eagle3.testing.synth import EAGLE, SynthSpec, draft_config, draft_tensors


def test_sharded_pytorch_bin_is_indexed_and_read(tmp_path: Path) -> None:
    spec = SynthSpec(producer=EAGLE)
    tensors = draft_tensors(spec)
    names = sorted(tensors)
    shards = {"pytorch_model-00001-of-00002.bin": names[:5], "pytorch_model-00002-of-00002.bin": names[5:]}
    for filename, part in shards.items():
        torch.save({n: tensors[n] for n in part}, tmp_path / filename)
    weight_map = {n: f for f, part in shards.items() for n in part}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (tmp_path / "config.json").write_text(json.dumps(draft_config(spec)))

    ckpt = Checkpoint.open(tmp_path)
    assert ckpt.problems == [] and set(ckpt.tensors) == set(names)
    assert torch.equal(ckpt.read("d2t"), tensors["d2t"])
    chunks = list(ckpt.chunks("fc.weight", chunk_bytes=1024))
    assert len(chunks) > 1 and torch.equal(torch.cat(chunks), tensors["fc.weight"].reshape(-1))
    assert ckpt.format.producer == EAGLE
