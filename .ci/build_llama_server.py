"""Build llama.cpp's ``llama-server`` (CPU) from the tree a llama-cpp-python sdist vendors, once, into a cache.

``python .ci/build_llama_server.py [VERSION] [--cache DIR] [--jobs N]``: pip downloads the sdist (PyPI only),
extracts ``vendor/llama.cpp`` under ``DIR/llama-cpp-python-VERSION``, configures it with CMake (Release, CPU,
the server only: no tests, examples, web UI download or OpenSSL) and builds the ``llama-server`` target alone.
Prints the binary's path: the value of ``--eagle3-llamacpp-server`` / ``EAGLE3_LLAMACPP_SERVER``. The tree
beside it holds the same build's ``convert_hf_to_gguf.py`` and gguf-py, which the live fixture converts with.
A second run finds the binary and only prints it, as does a run with ``EAGLE3_LLAMACPP_SERVER`` naming an existing
binary (a server the user built). DIR defaults to ``$XDG_CACHE_HOME/pytest-eagle3`` (else ``~/.cache/pytest-eagle3``).
About 15 minutes on 2 cores; needs CMake >= 3.18 and a C++17 compiler.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

#: llama-cpp-python version -> the llama.cpp build number and commit its vendor/llama.cpp is
#: (pytest_eagle3/knowledge/llamacpp_builds.py VENDORED; repeated so the script needs no install).
BUILDS = {"0.3.36": ("11312", "0c1e57098")}
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
               "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF")


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/pytest-eagle3``, else ``~/.cache/pytest-eagle3``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-eagle3"


def unpack(version: str, cache: Path) -> Path:
    """The sdist's ``vendor/llama.cpp`` under ``cache``, downloaded and extracted when absent."""
    root = f"llama_cpp_python-{version}"
    tree = cache / f"llama-cpp-python-{version}" / root / "vendor" / "llama.cpp"
    if (tree / "CMakeLists.txt").is_file():
        return tree
    dest = cache / f"llama-cpp-python-{version}"
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", f"llama-cpp-python=={version}", "--no-deps",
                    "--no-binary", "llama-cpp-python", "-d", str(dest)], check=True, stdout=sys.stderr)
    prefix = f"{root}/vendor/llama.cpp/"
    with tarfile.open(dest / f"{root}.tar.gz") as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix) or m.name == f"{root}/PKG-INFO"]
        archive.extractall(dest, members=members, filter="data")
    (dest / f"{root}.tar.gz").unlink()
    return tree


def build(version: str, cache: Path, jobs: int) -> Path:
    """Configure and build the ``llama-server`` target of that tree; the binary's path."""
    number, commit = BUILDS[version]
    tree = unpack(version, cache)
    out = tree / "build"
    binary = out / "bin" / "llama-server"
    if binary.is_file():
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SystemExit(f"build_llama_server: {tool} not found (needs CMake >= 3.18 and a C++17 compiler)")
    subprocess.run(["cmake", "-S", str(tree), "-B", str(out), *CMAKE_FLAGS, f"-DLLAMA_BUILD_NUMBER={number}",
                    f"-DLLAMA_BUILD_COMMIT={commit}"], check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", str(out), "--target", "llama-server", "--config", "Release",
                    "-j", str(jobs)], check=True, stdout=sys.stderr)
    return binary


def main(argv: list[str] | None = None) -> int:
    """Build (or find) the server and print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", nargs="?", default="0.3.36", choices=sorted(BUILDS),
                        help="the llama-cpp-python sdist whose vendored llama.cpp is built (default 0.3.36: b11312)")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="where the tree and build go")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="parallel compile jobs (default 2)")
    args = parser.parse_args(argv)
    given = os.environ.get("EAGLE3_LLAMACPP_SERVER", "")
    if given and Path(given).is_file():
        print(given)
        return 0
    print(build(args.version, args.cache.resolve(), args.jobs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
