"""The mlx-vlm capture scan (pytest_eagle3/scanners/mlx_capture.py, a static reading) against mlx-vlm's own classes.

In the mlx-vlm interpreter (``EAGLE3_MLX_VLM_PYTHON``, or the tox env mlxvlm0710) every model package is imported
and the class its EAGLE-3 loop calls (``Model``'s ``self.language_model``, else ``Model``) is resolved by Python
itself, its ``__call__`` through the real MRO: whether that ``__call__`` reads ``capture_layer_ids`` must be what
the generated table says, architecture by architecture, for the installed release. Skips naming the interpreter
otherwise.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_eagle3.knowledge.capture import CAPTURES, capture_support
from pytest_eagle3.knowledge.generated.mlx_vlm_capture_table import MLX_VLM_PACKAGE_OF, MLX_VLM_RELEASES
from pytest_eagle3.knowledge.releases import MLX_VLM
from pytest_eagle3.probes.run import env_variable, find_engine_python

pytestmark = pytest.mark.engine

#: Run in the engine's interpreter: package -> whether the class the loop calls reads capture_layer_ids (None:
#: the package does not import there), and the installed release.
RUNTIME = r'''
import importlib, inspect, json, re, sys
from importlib.metadata import version
packages = json.loads(sys.argv[1])
out = {}
for package in packages:
    try:
        module = importlib.import_module(f"mlx_vlm.models.{package}")
        model = module.Model
        init = inspect.getsource(model.__init__)
    except Exception:
        out[package] = None
        continue
    built = re.search(r"self\.language_model\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\(", init)
    names = sys.modules[model.__module__].__dict__
    lm = names.get(built.group(1)) if built else model
    if not isinstance(lm, type):  # language_cls = A if ... else B: the package's own LanguageModel
        lm = getattr(module, "LanguageModel", model)
    call = getattr(lm, "__call__", None) if lm is not None else None
    try:
        source = inspect.getsource(call)
    except (TypeError, OSError):
        source = ""
    params = inspect.signature(call).parameters if call is not None else {}
    out[package] = "capture_layer_ids" in params or "'capture_layer_ids'" in source or '"capture_layer_ids"' in source
print(json.dumps({"version": version("mlx-vlm"), "packages": out}))
'''


@pytest.fixture(scope="module")
def runtime() -> dict[str, object]:
    python = find_engine_python(MLX_VLM)
    if python is None:
        pytest.skip(f"no mlx-vlm interpreter: set {env_variable(MLX_VLM)} or run tox -e mlxvlm0710")
    packages = sorted(set(MLX_VLM_PACKAGE_OF.values()))
    done = subprocess.run([str(python), "-c", RUNTIME, json.dumps(packages)], capture_output=True, text=True,
                          check=False, timeout=600, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_scan_says_what_mlx_vlms_own_classes_do(runtime: dict[str, object]) -> None:
    """Every architecture of the installed release: captures per the table exactly where the class mlx-vlm calls
    reads capture_layer_ids at run time (packages that do not import on this machine are left out, and counted)."""
    release = str(runtime["version"])
    if release not in MLX_VLM_RELEASES:
        pytest.skip(f"mlx-vlm {release} is not a release the scan read ({MLX_VLM_RELEASES[-1]} is the newest)")
    packages: dict[str, bool | None] = runtime["packages"]  # type: ignore[assignment]
    wrong, imported = [], 0
    for arch, package in sorted(MLX_VLM_PACKAGE_OF.items()):
        reads = packages.get(package)
        if reads is None:
            continue
        imported += 1
        said = capture_support(MLX_VLM, Version(release), arch).support == CAPTURES
        if said != reads:
            wrong.append(f"{arch} ({package}): table {'captures' if said else 'does not'}, runtime "
                         f"{'reads' if reads else 'does not read'} capture_layer_ids")
    assert imported >= len(MLX_VLM_PACKAGE_OF) // 2, f"only {imported} architectures' packages imported"
    assert not wrong, wrong
