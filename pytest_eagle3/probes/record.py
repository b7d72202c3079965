"""Probe every case in real engine interpreters and record the outcomes (``probes/results.json``).

    python -m pytest_eagle3.probes.record --python /venv-vllm/bin/python --python /venv-sglang/bin/python \\
        --out pytest_eagle3/probes/results.json

Results are merged into ``--out`` per (engine, version), so envs can be added one at a time. Each
case gets a verdict, ``loads``, ``loads with loss`` or ``refused`` (``not on CPU`` where the CPU
backend itself cannot build it); the raw facts it came from are kept. Loss: a checkpoint tensor
dropped (``t2d`` never counts, nor ``fc.weight`` when the config turns fc off); a parameter the
draft keeps left at its initial values; a reduced vocab served with the identity map; a trained
``lm_head`` replaced by the target's, or the target's full-vocab ``lm_head`` given to a
reduced-vocab draft. Replacing ``embed_tokens`` is not counted: every producer saves a frozen
copy of the target's embedding.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_eagle3.probes.cases import CASES_BY_NAME, write_all
from pytest_eagle3.probes.compare import cpu_backend_limit, losses
from pytest_eagle3.probes.run import ENGINES, engine_version, run_probes
from pytest_eagle3.words import plural

SCHEMA = "pytest-eagle3/probe-results/1"
DEFAULT_OUT = Path(__file__).with_name("results.json")
#: The verdict of a case the CPU backend cannot build (compare.CPU_BACKEND_LIMITS): no verdict on the draft.
NOT_ON_CPU = "not on CPU"


def outcome_word(engine: str, result: dict[str, Any], reduced_vocab: bool) -> str:
    """A probe result in one word: its outcome, "loads with loss" or "loads"."""
    if cpu_backend_limit(result):
        return NOT_ON_CPU
    if result["outcome"] != "loaded":
        return str(result["outcome"])
    return "loads with loss" if losses(engine, result, reduced_vocab) else "loads"


def summary(engine: str, result: dict[str, Any], reduced_vocab: bool) -> dict[str, Any]:
    """The facts of one probe, without the long lists (the map is summarised)."""
    mapping = result["draft_to_target"]
    return {
        "verdict": outcome_word(engine, result, reduced_vocab),
        "outcome": result["outcome"],
        "stage": result["stage"],
        "error": (result["error"] or "")[:300] or None,
        "draft_class": result["draft_class"],
        "uninitialised": result["uninitialised"],
        "dropped": result["dropped"],
        "draft_to_target": None if mapping is None else f"{plural(len(mapping), 'id')}, first {mapping[:4]}",
        "aux_layer_ids": result["aux_layer_ids"],
        "captured_inputs_of": result["captured_inputs_of"],
        "aux_layer_ids_other_mode": result["aux_layer_ids_other_mode"],
        "fc_input_width": result["fc_input_width"],
        "fc_applied": result["fc_applied"],
        "norms": result["norms"],
        "embed_tokens": result["embed_tokens"],
        "lm_head": result["lm_head"],
        "draft_layers": result["draft_layers"],
        "shapes": result.get("shapes") or {},
    }


def probe_all(python: str, root: Path, names: tuple[str, ...] | None = None) -> tuple[str, str, dict[str, Any]]:
    """(engine, version, {case: summary}) for one interpreter (every case, or the named ones)."""
    engine = next(e for e in ENGINES if engine_version(e, python))
    target, drafts = write_all(root, names)
    results = run_probes(engine, python, [(d, target) for d in drafts.values()], timeout=240)
    version = next((r["version"] for r in results if r["version"]), engine_version(engine, python) or "?")
    for result in results:  # no machine paths in the record: case folders and the engine's install
        if result["error"]:
            text = result["error"].replace(str(root.resolve()), "<cases>").replace(str(root), "<cases>")
            result["error"] = re.sub(r"/\S*/site-packages/", "<site-packages>/", text)
    return engine, version, {
        name: summary(engine, r, CASES_BY_NAME[name].spec.draft_vocab_size < CASES_BY_NAME[name].spec.vocab_size)
        for name, r in zip(drafts, results)
    }


#: Table cells: one character per verdict, so that every probed release fits in one row.
CELLS = {"loads": "✓", "loads with loss": "~", "refused": "✗", NOT_ON_CPU: "·", "probe-error": "?"}


def run_key(key: str) -> tuple[str, Version]:
    """Order of runs: by engine, then by version (0.9.2 before 0.32.0)."""
    engine, _, version = key.partition("==")
    return engine, Version(version)


def markdown(data: dict[str, Any]) -> str:
    """The support matrix, one table per engine: case x release -> verdict (see ``CELLS``)."""
    runs = data["runs"]
    lines = ["Cells: " + ", ".join(f"`{c}` {v}" for v, c in CELLS.items()) + "."]
    for engine in sorted({run["engine"] for run in runs.values()}):
        keys = sorted((k for k, run in runs.items() if run["engine"] == engine), key=run_key)
        versions = [runs[k]["version"] for k in keys]
        lines += ["", f"**{engine}** ({len(keys)} releases)", "",
                  f"| case | {' | '.join(versions)} |", "|---" * (len(keys) + 1) + "|"]
        for name in data["cases"]:
            cells = [CELLS.get(runs[k]["results"][name]["verdict"], "?") if name in runs[k]["results"] else " "
                     for k in keys]
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    dates = sorted({run["date"] for run in runs.values()})
    torches: dict[str, list[str]] = {}
    for key in sorted(runs, key=run_key):
        torches.setdefault(runs[key]["torch"], []).append(key)
    torch_text = "; ".join(f"torch {t}: {', '.join(k.replace('==', ' ') for k in ks)}" for t, ks in torches.items())
    lines.append(f"\nProbed {', '.join(dates)} ({torch_text}).")
    return "\n".join(lines)


def probes_markdown(path: Path = DEFAULT_OUT) -> str:
    """The README's table of recorded probe outcomes."""
    return markdown(json.loads(path.read_text(encoding="utf-8"))).rstrip() + "\n"


def _torch_version(python: str) -> str:
    code = "import importlib.metadata as m; print(m.version('torch'))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    """The command line: run the probes in each ``--python``, record them, or print the matrix."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", action="append", help="an engine interpreter (repeatable)")
    parser.add_argument("--rejudge", action="store_true", help="recompute the verdicts of the stored runs")
    parser.add_argument("--markdown", action="store_true", help="print the support matrix table")
    parser.add_argument("--case", action="append", help="probe only this case (repeatable) and merge it into the "
                        "release's recorded run, which must exist; the case's result carries its own date")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    out = Path(args.out)
    data: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    data.setdefault("schema", SCHEMA)
    data["cases"] = {name: case.description for name, case in CASES_BY_NAME.items()}
    runs = data.setdefault("runs", {})
    if args.rejudge:
        for run in runs.values():
            for name, result in run["results"].items():
                spec = CASES_BY_NAME[name].spec
                result["verdict"] = outcome_word(run["engine"], result, spec.draft_vocab_size < spec.vocab_size)
    for python in args.python or ():
        names = tuple(args.case) if args.case else None
        with tempfile.TemporaryDirectory(prefix="eagle3-matrix-") as tmp:
            engine, version, results = probe_all(python, Path(tmp), names)
        today = datetime.date.today().isoformat()
        if names:
            run = runs[f"{engine}=={version}"]
            run["results"].update({n: {**r, "probed": today} for n, r in results.items()})
        else:
            runs[f"{engine}=={version}"] = {
                "engine": engine, "version": version, "torch": _torch_version(python), "date": today,
                "results": results,
            }
        verdicts = [r["verdict"] for r in results.values()]
        print(f"{engine}=={version}: " + ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts))))
    data["runs"] = dict(sorted(runs.items(), key=lambda item: run_key(item[0])))
    out.write_text(json.dumps(data, indent=1) + "\n")
    if args.markdown:
        print(markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
