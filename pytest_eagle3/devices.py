"""CUDA devices visible to this process, found without initialising CUDA here.

Order: ``CUDA_VISIBLE_DEVICES`` (empty or ``-1`` hides every device), then ``nvidia-smi -L``, then
``/proc/driver/nvidia/gpus``. Nothing imports torch, so a later fork or engine start is unaffected.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROC_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class CudaDevices:
    """How many CUDA devices are visible, and how that was found."""

    count: int
    how: str

    @property
    def reason(self) -> str:
        """Why there is no CUDA device, for a skip reason."""
        return f"no CUDA device visible ({self.how})"


def cuda_devices(env: Mapping[str, str] | None = None, proc_gpus: Path = PROC_GPUS) -> CudaDevices:
    """Count visible CUDA devices without touching the CUDA runtime."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return CudaDevices(0, f"CUDA_VISIBLE_DEVICES={visible!r}")
    found = _nvidia_smi()
    if found is None:
        if proc_gpus.is_dir():
            found = (len(list(proc_gpus.iterdir())), str(proc_gpus))
        else:
            found = (0, f"no nvidia-smi, no {proc_gpus}")
    count, how = found
    if visible is not None and count:
        count = min(count, len([v for v in visible.split(",") if v.strip()]))
        how += f", CUDA_VISIBLE_DEVICES={visible!r}"
    return CudaDevices(count, how)


def _nvidia_smi() -> tuple[int, str] | None:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return 0, f"nvidia-smi -L failed: {(done.stderr or done.stdout).strip()[:200]}"
    return sum(1 for line in done.stdout.splitlines() if line.startswith("GPU ")), "nvidia-smi -L"
