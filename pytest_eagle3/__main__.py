"""``python -m pytest_eagle3``: the command line lives in :mod:`pytest_eagle3.shell.cli`."""

import os
import sys

from pytest_eagle3.shell.cli import main

if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head`: the reader left; say nothing more (no traceback, no flush error)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    raise SystemExit(code)
