"""Write ``pytest_eagle3/interpreter_options.py``: each bundled engine's interpreter option, from the registry.

    python -m pytest_eagle3.scanners.interpreter_options           # rewrite it
    python -m pytest_eagle3.scanners.interpreter_options --check   # exit 1 when it differs from the registry

An engine module with a ``python_option`` (``knowledge/engine.py`` ``Engine``) gets ``--eagle3-<name>-python``, its
env variable and ini key, with the engine's ``interpreter_help``. The option table (``option_table.py``) reads the
generated module, standard library only, so the idle plugin imports no knowledge; an engine registered by another
package (the entry points) gets its option when the option table is imported, without this file.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

#: The generated module, and the command that writes it (named by the check and the test that compare it).
TARGET = Path(__file__).resolve().parents[1] / "interpreter_options.py"
COMMAND = "python -m pytest_eagle3.scanners.interpreter_options"

HEADER = f'''"""Each bundled engine's interpreter option: ``(engine, option dest, help)``, in the release list's order.

Generated from the engine registry (each engine's ``python_option`` and ``interpreter_help``,
``knowledge/engine.py``) by ``{COMMAND}``; do not edit. Standard library only:
the idle plugin imports it through ``option_table.py`` in every pytest run.
"""

from __future__ import annotations

'''


def rows() -> list[tuple[str, str, str]]:
    """``(engine, dest, help)`` of every bundled engine with a ``python_option``, in the release list's order
    (vLLM first). Engines from entry points are left out: the option table adds them where they are installed."""
    from pytest_eagle3.knowledge.engines import package_engines
    from pytest_eagle3.knowledge.releases import RELEASES

    bundled = {engine.name: engine for engine in package_engines()}
    return [(engine.name, engine.interpreter.python_option, engine.interpreter_help)
            for engine in (bundled[name] for name in RELEASES if name in bundled) if engine.interpreter.python_option]


def _literal(text: str, indent: str) -> list[str]:
    """``text`` as adjacent string literals of at most ~100 characters, joining back to exactly ``text``."""
    parts = textwrap.wrap(text, 100, drop_whitespace=False, break_on_hyphens=False, break_long_words=False)
    assert "".join(parts) == text, text
    return [f"{indent}{part!r}" for part in parts]


def render() -> str:
    """The generated module's text."""
    lines = [HEADER.rstrip("\n"), "", "INTERPRETERS: tuple[tuple[str, str, str], ...] = ("]
    for engine, dest, help_text in rows():
        lines.append(f"    ({engine!r}, {dest!r},")
        lines.extend(_literal(help_text, "     "))
        lines[-1] += "),"
    lines.append(")")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated module, or with ``--check`` say whether it is the registry's (exit 1 if not)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing: exit 1 when it differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if TARGET.is_file() and TARGET.read_text(encoding="utf-8") == text:
            return 0
        print(f"{TARGET.name} differs from the engine registry: regenerate it with {COMMAND}", file=sys.stderr)
        return 1
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.name}: {len(rows())} interpreter options")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
