"""Hub ids (``hf://ORG/NAME[@REVISION]``) in the commands: pinned to their commit, or downloaded where the
command needs every byte (``fix`` writes a copy, ``capture`` runs the target). A Hub that cannot give the
repo is an argparse usage error naming what to do."""

from __future__ import annotations

import argparse
import sys

from pytest_eagle3.checkpoint.hub import HubError, is_hub, pin


def pinned(parser: argparse.ArgumentParser, flag: str, spec: str | None, download: bool = False) -> str | None:
    """``spec`` unchanged unless it is a Hub id: then ``hf://ORG/NAME@SHA`` (weights downloaded with ``download``)."""
    if spec is None or not is_hub(spec):
        return spec
    try:
        return pin(spec, download=download)
    except HubError as exc:
        parser.error(f"{flag}: {exc}")


def local(parser: argparse.ArgumentParser, flag: str, spec: str, why: str) -> str:
    """A local folder for ``spec``: itself, or a Hub id's snapshot in the Hugging Face cache, its weights
    downloaded (said on stderr, with ``why``)."""
    if not is_hub(spec):
        return spec
    from pytest_eagle3.checkpoint.hub import download_weights

    print(f"{flag}: downloading the weights of {spec} into the Hugging Face cache ({why})", file=sys.stderr)
    try:
        return str(download_weights(spec))
    except HubError as exc:
        parser.error(f"{flag}: {exc}")


def config_only(parser: argparse.ArgumentParser, flag: str, spec: str | None, download: bool) -> str | None:
    """A target for ``fix``: a local path; a Hub id gives its downloaded snapshot (``download``), else its
    config.json (layer counts and vocab, no measurement)."""
    if spec is None or not is_hub(spec):
        return spec
    if download:
        return local(parser, flag, spec, "--download-weights")
    from pytest_eagle3.checkpoint.hub import open_repo

    repo = pinned(parser, flag, spec)
    return str(open_repo(str(repo)).snapshot / "config.json")
