"""llama-cpp-python releases and the llama.cpp build each vendors: ``llamacpp==0.3.36`` means ``llamacpp==b11312``.

Read in each sdist: its CHANGELOG.md names the vendored commit ("update llama.cpp to ggml-org/llama.cpp@COMMIT"),
and ``vendor/llama.cpp`` is that tree (no git metadata: the build number is the commit's ``bNNNN`` tag, found in
public build records that print ``bNNNN-COMMIT``). Every build is also a llama.cpp release; this table names only
the sdists read.
"""

from __future__ import annotations

from typing import NamedTuple


class Vendored(NamedTuple):
    """One llama-cpp-python sdist: the llama.cpp build and commit in its ``vendor/llama.cpp``."""

    build: str
    commit: str
    eagle3: bool
    source: str


_SDIST = "llama-cpp-python {} sdist: CHANGELOG.md and vendor/llama.cpp read"

#: llama-cpp-python version -> what it vendors (oldest first).
VENDORED: dict[str, Vendored] = {
    "0.3.28": Vendored("9553", "9e3b928fd", False, _SDIST.format("0.3.28") + " (no src/models/eagle3.cpp)"),
    "0.3.29": Vendored("9625", "f05cf4676", True, _SDIST.format("0.3.29") + " (first with src/models/eagle3.cpp)"),
    "0.3.32": Vendored("9837", "b3fed31b9", True, _SDIST.format("0.3.32")),
    "0.3.34": Vendored("9976", "e3546c794", True, _SDIST.format("0.3.34") + " (aux ids still hard-coded)"),
    "0.3.35": Vendored("10454", "4df29be4f", True, _SDIST.format("0.3.35") + " (first with the config's aux ids)"),
    "0.3.36": Vendored("11312", "0c1e57098", True, _SDIST.format("0.3.36")),
}
#: llama.cpp serves a GGUF: the fixed copy is converted by llama.cpp's own converter (its gguf-py; PyPI's gguf has no
#: EAGLE-3 entries), which writes the copy's top-level aux ids into ``eagle3.target_layers``
#: (conversion/llama.py LlamaModel.__init__, b10454-b11312; before b10454 the ids are always [2, L//2, L-3]).
CONVERT_COMMAND = "python convert_hf_to_gguf.py {draft} --target-model-dir {target} --outfile {gguf}"
#: The distribution a ``llamacpp==0.x.y`` version names.
PYTHON_PACKAGE = "llama-cpp-python"


def vendored_build(version: str) -> str | None:
    """The llama.cpp build number a llama-cpp-python release vendors, or None when no sdist read names it."""
    found = VENDORED.get(version)
    return found.build if found is not None else None
