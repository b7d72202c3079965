"""Bring llama.cpp's converter tree (convert_hf_to_gguf.py, conversion/, gguf-py/) from a llama-cpp-python sdist.

``python .ci/llamacpp_tree.py 0.3.36 DEST``: pip downloads the sdist (PyPI only) and extracts PKG-INFO and the
converter's files of ``vendor/llama.cpp`` under DEST, keeping the sdist's layout; prints the tree's path (the
value of EAGLE3_LLAMACPP_DIR). The sdist is not built: llama.cpp's own gguf-py is what the converter imports.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

WANTED = ("PKG-INFO", "vendor/llama.cpp/convert_hf_to_gguf.py", "vendor/llama.cpp/conversion/",
          "vendor/llama.cpp/gguf-py/")


def main(version: str, dest: Path) -> Path:
    root = f"llama_cpp_python-{version}"
    tree = dest / root / "vendor" / "llama.cpp"
    if (tree / "convert_hf_to_gguf.py").is_file():
        return tree
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", f"llama-cpp-python=={version}", "--no-deps",
                    "--no-binary", "llama-cpp-python", "-d", str(dest)], check=True, stdout=sys.stderr)
    with tarfile.open(dest / f"{root}.tar.gz") as archive:
        members = [m for m in archive.getmembers()
                   if any(m.name == f"{root}/{w}" or (w.endswith("/") and m.name.startswith(f"{root}/{w}"))
                          for w in WANTED)]
        archive.extractall(dest, members=members, filter="data")
    (dest / f"{root}.tar.gz").unlink()
    return tree


if __name__ == "__main__":
    print(main(sys.argv[1], Path(sys.argv[2])))
