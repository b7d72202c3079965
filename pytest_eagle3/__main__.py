"""``python -m pytest_eagle3``: the command line lives in :mod:`pytest_eagle3.shell.cli`."""

from pytest_eagle3.shell.cli import main

if __name__ == "__main__":
    raise SystemExit(main())  # main() ends quietly when the reader leaves early (``... | head -1``)
