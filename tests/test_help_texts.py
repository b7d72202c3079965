"""The help texts are for users: no RST, no developer's remark, every argument explained, the defaults the
domain defines, all seven engines named, and ``check`` taking what the pytest run takes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.user_runs import (
    DEMO,
    run_python,
)


def test_option_help_quotes_the_defaults_the_domain_defines() -> None:
    from pytest_eagle3.live.process import DEFAULT_START_TIMEOUT
    from pytest_eagle3.option_table import BY_DEST
    from pytest_eagle3.reference.defaults import (
        DEFAULT_MAX_LOSS,
        DEFAULT_MIN_ACCEPTANCE,
        DEFAULT_NEW_TOKENS,
        DEFAULT_STEPS,
    )

    quoted = {dest: re.search(r"\(default ([\d.]+)", BY_DEST[dest].help).group(1)  # type: ignore[union-attr]
              for dest in ("eagle3_min_acceptance", "eagle3_max_loss", "eagle3_k", "eagle3_continuation",
                           "eagle3_server_timeout")}
    assert {k: float(v) for k, v in quoted.items()} == {
        "eagle3_min_acceptance": DEFAULT_MIN_ACCEPTANCE, "eagle3_max_loss": DEFAULT_MAX_LOSS,
        "eagle3_k": DEFAULT_STEPS, "eagle3_continuation": DEFAULT_NEW_TOKENS,
        "eagle3_server_timeout": DEFAULT_START_TIMEOUT}
    from pytest_eagle3.live.process import MAX_START_TIMEOUT
    from pytest_eagle3.verdict import settings

    assert (settings.DEFAULT_SERVER_TIMEOUT, settings.MAX_SERVER_TIMEOUT) == (DEFAULT_START_TIMEOUT, MAX_START_TIMEOUT)


def test_pytest_help_shows_the_eagle3_options_without_rst(tmp_path: Path) -> None:
    text = run_python(["-m", "pytest", "--help"], tmp_path, COLUMNS="200").stdout
    ours = [line for line in text.split("EAGLE-3 draft checkpoint contracts:")[1].split("\n\n")[0].splitlines()]
    ours += [line for line in text.splitlines() if line.lstrip().startswith("eagle3_")]
    assert len(ours) > 20 and not [line for line in ours if "`" in line], ours
    markers = run_python(["-m", "pytest", "--markers"], tmp_path, COLUMNS="200").stdout
    assert not [line for line in markers.splitlines() if ("eagle3" in line or "gpu" in line) and "`" in line]


def test_the_help_texts_are_for_users(tmp_path: Path) -> None:
    top = run_python(["-m", "pytest_eagle3", "--help"], tmp_path).stdout
    assert "``" not in top and "traceback" not in top.lower() and "COMMAND --help" in " ".join(top.split())
    for command in ("fix", "plan", "check"):
        text = run_python(["-m", "pytest_eagle3", command, "--help"], tmp_path).stdout
        assert "`" not in text, text
        positional = text.split("positional arguments:")[1].split("options:")[0]
        for line in positional.strip().splitlines():
            if line.startswith("  ") and not line.startswith("   "):
                assert len(line.split()) > 1, f"{command}: {line.strip()} has no help text"


def test_check_takes_what_the_pytest_run_takes(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest_eagle3", "check", str(DEMO), "-q", "-k", "readable", "--engine", "vllm"], tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr
    assert "--hidden-states DIR" in run_python(["-m", "pytest_eagle3", "check", "--help"], tmp_path).stdout


def test_help_names_every_engine(tmp_path: Path) -> None:
    done = run_python(["-m", "pytest_eagle3", "--help"], tmp_path, COLUMNS="200")
    for name in ("SGLang", "vLLM", "TensorRT-LLM", "LMDeploy", "llama.cpp", "mlx-vlm", "TokenSpeed",
                 "OpenVINO GenAI"):
        assert name in done.stdout


def test_the_engine_options_help_names_the_registrys_engines_in_its_order() -> None:
    """``--eagle3-engine``'s help is built at every pytest start without importing an engine module: the names it
    reads from the modules' text are the registry's, in the registry's order."""
    from pytest_eagle3.knowledge.engines import REGISTRY
    from pytest_eagle3.option_table import BY_DEST, engine_names

    assert engine_names() == tuple(engine.name for engine in REGISTRY)
    assert f"comma list of {', '.join(engine_names())}, all" in BY_DEST["eagle3_engines"].help
