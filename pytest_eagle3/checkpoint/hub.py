"""Drafts and targets named by Hub id (``hf://ORG/NAME[@REVISION]``), read through ``huggingface_hub``.

The revision is resolved to its commit once (``pin``) and every later read names that commit. The JSON
files are downloaded into the library's cache (``hf_hub_download``); the safetensors headers and the
small tensors a contract reads are fetched by HTTP range requests with the library's own client
(``get_session``, ``build_hf_headers``, ``hf_hub_url``), so ``HF_ENDPOINT``, the token, proxies and
``HF_HUB_OFFLINE`` apply. The weights are downloaded only when asked (``--eagle3-download-weights``),
or by the commands that need every byte (``fix``, ``capture``). huggingface_hub is imported here only.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pytest_eagle3.checkpoint.tensorfiles import CheckpointReadError, WeightsNotDownloaded

PREFIX = "hf://"
#: What a contract that needs every byte says when the weights stayed on the Hub.
NOT_DOWNLOADED = "not run: weights not downloaded (give --eagle3-download-weights)"
#: The files downloaded for a header-only read: the configs and the shard indexes (weights never).
SMALL_FILES = ("config.json", "model.safetensors.index.json", "pytorch_model.bin.index.json")
#: What ``--eagle3-download-weights`` fetches: weights, configs and tokenizer files, never the duplicate
#: original/ consolidated checkpoints some repos also carry.
DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "pytorch_model*.bin", "*.model", "*.tiktoken", "*.txt"]
IGNORE_PATTERNS = ["original/*"]
#: The largest tensor read by range without the weights downloaded (d2t, t2d, norms are far smaller).
MAX_RANGE_TENSOR = 16 * 1024 * 1024
T = TypeVar("T")


class HubError(Exception):
    """A Hub id that cannot be read; the message says what to do."""


def is_hub(path: object) -> bool:
    """Whether ``path`` is a pinned Hub id (``hf://owner/name@sha``) rather than a folder."""
    return isinstance(path, str) and path.startswith(PREFIX)


#: A Hub id mistyped: ``hf:`` in any case with any number of slashes before ``ORG/NAME[@REVISION]``.
_MISTYPED = re.compile(r"(?i)hf:/*([A-Za-z0-9][\w.\-]*/[\w.\-]+(?:@\S+)?)")


def meant_hub_id(path: str) -> str | None:
    """The Hub id a mistyped one was meant as (``hf:/org/name``, ``HF://org/name``, ``hf:///org/name`` ->
    ``hf://org/name``); None for a well-typed id or anything else."""
    found = _MISTYPED.fullmatch(path)
    meant = f"{PREFIX}{found.group(1)}" if found else None
    return meant if meant != path else None


def parse(spec: str) -> tuple[str, str | None]:
    """``hf://ORG/NAME[@REVISION]`` -> (repo id, revision or None); HubError when it is not one."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils._validators import validate_repo_id

    body = spec[len(PREFIX):]
    repo, at, revision = body.partition("@")
    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        meant = meant_hub_id(spec)
        hint = f"did you mean {meant}?" if meant else str(exc)
        raise HubError(f"{spec} is not a Hub id hf://ORG/NAME[@REVISION] ({hint})") from None
    if at and not revision:
        raise HubError(f"{spec}: nothing after @ (give a branch, tag or commit, or drop the @)")
    return repo, revision or None


def weight_names(names: list[str]) -> list[str]:
    """The repo's top-level weight files (safetensors, else pytorch_model*.bin)."""
    top = [n for n in names if "/" not in n]
    found = [n for n in top if n.endswith(".safetensors")]
    return found or [n for n in top if fnmatch.fnmatch(n, "pytorch_model*.bin")]


def pin(spec: str, *, download: bool = False) -> str:
    """Resolve the revision to its commit (``hf://ORG/NAME@SHA``), fetch the JSON files (and, with
    ``download``, the weights) into the cache. HubError names what to do when it cannot."""
    repo, revision = parse(spec)
    if offline():
        return f"{PREFIX}{repo}@{_offline_snapshot(spec, repo, revision).name}"
    sha, sizes = _calls(spec, lambda: _listing(repo, revision))
    weights = weight_names(list(sizes))
    if not weights:
        raise HubError(f"{spec}: the repo at {sha[:12]} holds no *.safetensors or pytorch_model*.bin weights "
                       "(is it the draft's or the target's repo?)")
    if download:
        _calls(spec, lambda: _download_all(repo, sha))
    elif not weights[0].endswith(".safetensors"):
        raise HubError(f"{spec}: its weights are pytorch_model*.bin (a pickle, no header to read by range): "
                       "give --eagle3-download-weights")
    for name in SMALL_FILES:
        if name in sizes:
            _calls(spec, functools.partial(_download, repo, sha, name))
    return f"{PREFIX}{repo}@{sha}"


@dataclass
class HubFiles:
    """One pinned repo's files: the JSON ones in the local snapshot folder, the weights on the Hub (read by
    range) unless they are in the cache. ``local`` is True when every weight file is on disk."""

    repo: str
    sha: str
    snapshot: Path
    sizes: dict[str, int]
    transferred: int = 0

    @property
    def local(self) -> bool:
        """Whether every weight file is already in the local snapshot (else bytes are read by range requests)."""
        return all((self.snapshot / name).is_file() for name in weight_names(list(self.sizes)))

    @property
    def spec(self) -> str:
        """The pinned id, ``hf://repo@sha``."""
        return f"{PREFIX}{self.repo}@{self.sha}"

    def _name(self, path: Path) -> str:
        return path.relative_to(self.snapshot).as_posix()

    def exists(self, path: Path) -> bool:
        """Whether the file is on disk or listed in the Hub repository."""
        return path.is_file() or (path.is_relative_to(self.snapshot) and self._name(path) in self.sizes)

    def glob(self, root: Path, pattern: str) -> list[Path]:
        """The repository's top-level files matching ``pattern``, as paths under ``root``."""
        return sorted(root / n for n in self.sizes if "/" not in n and fnmatch.fnmatch(n, pattern))

    def listing(self, root: Path) -> list[Path]:
        """Every top-level file of the repository, as paths under ``root``."""
        return self.glob(root, "*")

    def size(self, path: Path) -> int:
        """The file's size, from disk or the Hub listing."""
        return path.stat().st_size if path.is_file() else self.sizes[self._name(path)]

    def read(self, path: Path, start: int, nbytes: int) -> bytes:
        """``nbytes`` at ``start`` of one file: from the cache when it is there, else one range request."""
        if path.is_file():
            with path.open("rb") as handle:
                handle.seek(start)
                return handle.read(nbytes)
        if nbytes <= 0:
            return b""
        from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
        from huggingface_hub.errors import HfHubHTTPError
        from huggingface_hub.utils._headers import build_hf_headers

        url = hf_hub_url(self.repo, self._name(path), revision=self.sha)
        headers = {**build_hf_headers(), "Range": f"bytes={start}-{start + nbytes - 1}", "Accept-Encoding": "identity"}
        try:
            with get_session().stream("GET", url, headers=headers, follow_redirects=True) as response:
                hf_raise_for_status(response)
                if response.status_code != 206:
                    raise CheckpointReadError(f"{path.name}: the Hub answered {response.status_code} to a range "
                                              "request (no partial content): give --eagle3-download-weights")
                data = response.read()
        except CheckpointReadError:
            raise
        except Exception as exc:
            if not (isinstance(exc, HfHubHTTPError) or _transport_error(exc)):
                raise
            raise CheckpointReadError(f"{path.name}: bytes {start}-{start + nbytes - 1} from {self.spec}: "
                                      f"{str(exc).strip().splitlines()[0]}") from None
        self.transferred += len(data)
        if len(data) != nbytes:
            raise CheckpointReadError(f"{path.name}: expected {nbytes} bytes at offset {start}, read {len(data)}")
        return data

    def read_tensor_bytes(self, path: Path, start: int, nbytes: int) -> bytes:
        """A tensor's bytes: small ones by range; a weight matrix needs the weights downloaded."""
        if not path.is_file() and nbytes > MAX_RANGE_TENSOR:
            raise WeightsNotDownloaded(f"{path.name}: {nbytes} bytes at offset {start}: {NOT_DOWNLOADED}")
        return self.read(path, start, nbytes)


def open_repo(spec: str) -> HubFiles:
    """The files of ``hf://ORG/NAME@SHA`` (pinned first when it names a branch or tag; the listing is read once
    per commit and cache: it never changes)."""
    from huggingface_hub import constants

    if not re.fullmatch(r"[0-9a-f]{40}", parse(spec)[1] or ""):
        spec = pin(spec)
    return _open_repo(spec, str(constants.HF_HUB_CACHE), offline())


@functools.cache
def _open_repo(spec: str, cache: str, is_offline: bool) -> HubFiles:
    repo, sha = parse(spec)
    assert sha is not None
    snapshot = Path(cache).expanduser().resolve() / f"models--{repo.replace('/', '--')}" / "snapshots" / sha
    if is_offline:
        return HubFiles(repo, sha, snapshot, {p.relative_to(snapshot).as_posix(): p.stat().st_size
                                              for p in snapshot.rglob("*") if p.is_file()})
    return HubFiles(repo, sha, snapshot, _calls(spec, lambda: _listing(repo, sha))[1])


def _listing(repo: str, revision: str | None) -> tuple[str, dict[str, int]]:
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo, revision=revision, files_metadata=True)
    sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or ()}
    return str(info.sha), sizes


def _download(repo: str, sha: str, name: str) -> Path:
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(repo, name, revision=sha))


def _download_all(repo: str, sha: str) -> Path:
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo, revision=sha, allow_patterns=DOWNLOAD_PATTERNS,
                                  ignore_patterns=IGNORE_PATTERNS))


def download_weights(spec: str) -> Path:
    """The local snapshot folder of a Hub id with its weights downloaded (``fix``, ``capture``)."""
    return open_repo(pin(spec, download=True)).snapshot


def offline() -> bool:
    """``HF_HUB_OFFLINE`` as the library reads it."""
    from huggingface_hub import constants

    return bool(getattr(constants, "is_offline_mode", lambda: constants.HF_HUB_OFFLINE)())


def _transport_error(exc: Exception) -> bool:
    """The library's HTTP client failing to connect (httpx / httpx2 errors are not OSErrors)."""
    return isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore")


def _offline_snapshot(spec: str, repo: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo, revision=revision or "main", local_files_only=True))
    except (LocalEntryNotFoundError, OSError, ValueError):
        raise HubError(f"{spec}: HF_HUB_OFFLINE is set and the repo is not in the cache: unset HF_HUB_OFFLINE to "
                       "read it from the Hub (or download it once with --eagle3-download-weights)") from None
    if not weight_names([p.name for p in folder.iterdir()]):
        raise HubError(f"{spec}: HF_HUB_OFFLINE is set and the cache holds no weights of it: unset HF_HUB_OFFLINE "
                       "(headers are read from the Hub), or download it once with --eagle3-download-weights")
    return folder


def _calls(spec: str, call: Callable[[], T]) -> T:
    """Run a huggingface_hub call; its errors become a HubError naming what to do."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        return call()
    except GatedRepoError:
        raise HubError(f"{spec} is a gated repo and this token has no access: accept its terms on the Hub page, "
                       "then log in (hf auth login) or set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise HubError(f"{spec}: no such repo on the Hub (or it is private: log in with hf auth login or set "
                       "HF_TOKEN); check the ORG/NAME spelling") from None
    except RevisionNotFoundError:
        raise HubError(f"{spec}: no such revision (give a branch, tag or commit that exists, or drop the @)") from None
    except OfflineModeIsEnabled:
        raise HubError(f"{spec}: HF_HUB_OFFLINE is set: unset it to read the repo from the Hub") from None
    except HfHubHTTPError as exc:
        raise HubError(f"{spec}: the Hub refused: {str(exc).strip().splitlines()[0]}") from None
    except Exception as exc:  # the client's connection errors (httpx ConnectError, timeouts) and cache errors
        if not _transport_error(exc):
            raise
        raise HubError(f"{spec}: cannot reach the Hub ({type(exc).__name__}: {str(exc).strip()[:200]}): check the "
                       "network, HF_ENDPOINT and proxies, or set HF_HUB_OFFLINE=1 to use the cache") from None
