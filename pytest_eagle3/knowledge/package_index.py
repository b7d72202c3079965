"""Whether an engine release exists: the package index asked as pip asks it, once per process, with a short timeout.

Only a version newer than every release read is asked about (a typo such as ``vllm==0.99.0`` must not read as a
release nobody has read yet). The indexes are pip's own (``pip config list``: ``index-url``, ``extra-index-url``,
``find-links``, ``no-index``, ``proxy``, ``cert``; the ``PIP_*`` environment variables included), each asked for its
PEP 503 simple page (PEP 691 JSON where it answers in JSON). :data:`INDEX_ENV` overrides them: ``off`` asks nothing
(offline), a URL asks that simple index alone.

A release is *absent* only where every index answered and none lists it; where one could not be asked (no network,
``no-index``, ``off``) the answer is *unknown*, and the caller says so (:attr:`Listing.unasked`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from pytest_eagle3.knowledge.engine import Engine
from pytest_eagle3.knowledge.engines import REGISTRY

#: The environment variable that overrides pip's indexes: ``off`` (ask none: offline) or a simple index's URL.
INDEX_ENV = "EAGLE3_PACKAGE_INDEX"
OFF = "off"
#: Seconds one index may take to answer (a machine without network waits no longer than this per index).
TIMEOUT = 5.0
#: pip's default index.
PYPI_SIMPLE = "https://pypi.org/simple"


def index_name(engine: Engine) -> str | None:
    """The engine's distribution on the package index: its display name as PEP 503 writes it (``TensorRT-LLM`` ->
    ``tensorrt-llm``); None for an engine whose releases are builds (llama.cpp's ``b11312``: its repository's tags).
    TensorRT-LLM's files there are stubs, but its releases are listed."""
    return None if engine.release_prefix else canonicalize_name(engine.display.replace(" ", "-"))


#: Where a release of each engine is looked up, by engine name (an engine without a package left out).
INDEX_NAMES: dict[str, str] = {e.name: name for e in REGISTRY if (name := index_name(e)) is not None}
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.2"


@dataclass(frozen=True)
class Listing:
    """What the indexes list of one distribution: its versions, and why an index could not be asked (None: all
    answered)."""

    distribution: str
    #: The indexes asked, as the user reads them (credentials left out).
    where: str
    versions: frozenset[Version]
    unasked: str | None

    def lists(self, version: Version) -> bool:
        """Whether some index lists ``version``."""
        return version in self.versions

    @property
    def newest(self) -> Version | None:
        """The newest final release listed (a pre-release only where there is no final one)."""
        finals = [v for v in self.versions if not v.is_prerelease and not v.is_devrelease]
        return max(finals or self.versions, default=None)


@dataclass(frozen=True)
class Indexes:
    """Where pip looks: simple indexes, find-links locations, and why none is asked (None: they are)."""

    simple: tuple[str, ...]
    find_links: tuple[str, ...]
    off: str | None = None
    proxy: str | None = None
    cert: str | None = None


def pip_config() -> dict[str, str]:
    """pip's settings as ``pip config list`` prints them (files and ``PIP_*`` variables), by key
    (``global.index-url``, ``:env:.index-url``); empty where pip cannot be run."""
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              timeout=60, check=False, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.strip()] = value.strip().strip("'\"")
    return found


def _setting(config: dict[str, str], name: str) -> str | None:
    """One pip setting for ``pip download``: the environment's, else the ``download`` section's, else ``global``."""
    for section in (":env:", "download", "global"):
        if f"{section}.{name}" in config:
            return config[f"{section}.{name}"]
    return None


def _true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


@cache
def indexes() -> Indexes:
    """The indexes a lookup asks: :data:`INDEX_ENV`'s, else pip's."""
    override = os.environ.get(INDEX_ENV, "").strip()
    if override.lower() == OFF:
        return Indexes((), (), off=f"{INDEX_ENV}={OFF}")
    if override:
        return Indexes((override,), ())
    config = pip_config()
    if _true(_setting(config, "no-index")):
        return Indexes((), (), off="pip's no-index is set")
    main = _setting(config, "index-url") or PYPI_SIMPLE
    extra = (_setting(config, "extra-index-url") or "").split()
    links = (_setting(config, "find-links") or "").split()
    return Indexes((main, *extra), tuple(links), proxy=_setting(config, "proxy"), cert=_setting(config, "cert"))


def shown(url: str) -> str:
    """A URL without its credentials (an index address may carry a token)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.names.append(href.split("#")[0].rstrip("/").rsplit("/", 1)[-1])


def version_of(filename: str, dist: str) -> Version | None:
    """The version of ``dist`` a wheel's or an sdist's file name holds (None: another distribution's, or no
    version)."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            return version if name == canonicalize_name(dist) else None
        for suffix in (".tar.gz", ".zip"):
            if filename.endswith(suffix):
                stem, _, text = filename.removesuffix(suffix).rpartition("-")
                return Version(text) if canonicalize_name(stem) == canonicalize_name(dist) else None
    except (InvalidVersion, ValueError):
        return None
    return None


def file_names(body: str, content_type: str) -> list[str]:
    """The file names a simple page lists: PEP 691 JSON (``files[].filename``) or PEP 503 HTML (the links)."""
    if "json" in content_type:
        data = json.loads(body)
        return [str(f.get("filename", "")) for f in data.get("files") or [] if isinstance(f, dict)]
    links = _Links()
    links.feed(body)
    return links.names


def _opener(where: Indexes) -> urllib.request.OpenerDirector:
    import ssl

    handlers: list[urllib.request.BaseHandler] = []
    if where.proxy:
        handlers.append(urllib.request.ProxyHandler({"http": where.proxy, "https": where.proxy}))
    if where.cert and Path(where.cert).is_file():
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=where.cert)))
    return urllib.request.build_opener(*handlers)


def _simple_page(opener: urllib.request.OpenerDirector, index: str, dist: str) -> list[str]:
    """The file names ``index`` lists for ``dist`` (empty: it has no such project); OSError when it cannot be
    asked."""
    url = f"{index.rstrip('/')}/{canonicalize_name(dist)}/"
    if url.startswith("file:"):
        folder = Path(urllib.request.url2pathname(urlsplit(url).path))
        page = folder / "index.html"
        if page.is_file():
            return file_names(page.read_text(encoding="utf-8", errors="replace"), "text/html")
        return [p.name for p in folder.iterdir()] if folder.is_dir() else []
    request = urllib.request.Request(url, headers={"Accept": _ACCEPT})
    try:
        with opener.open(request, timeout=TIMEOUT) as response:
            body = response.read().decode("utf-8", "replace")
            return file_names(body, response.headers.get("Content-Type", ""))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return []
        raise OSError(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        raise OSError(str(getattr(exc, "reason", exc))) from None


def _find_links(location: str) -> list[str]:
    """The file names a find-links location holds (a local folder; a remote page is not read)."""
    path = Path(urllib.request.url2pathname(urlsplit(location).path)) if location.startswith("file:") else Path(
        location)
    return [p.name for p in path.iterdir()] if path.is_dir() else []


@cache
def listing(distribution: str) -> Listing:
    """What the indexes list of ``distribution``, asked once per process."""
    where = indexes()
    if where.off is not None:
        return Listing(distribution, "", frozenset(), f"the package index was not asked ({where.off})")
    opener = _opener(where)
    names: list[str] = []
    failures: list[str] = []
    for index in where.simple:
        try:
            names.extend(_simple_page(opener, index, distribution))
        except OSError as exc:
            failures.append(f"{shown(index)}: {exc}")
    for location in where.find_links:
        try:
            names.extend(_find_links(location))
        except OSError as exc:
            failures.append(f"{shown(location)}: {exc}")
    versions = frozenset(v for v in (version_of(n, distribution) for n in names) if v is not None)
    unasked = (f"the package index could not be asked ({'; '.join(failures)}; timeout {TIMEOUT:g} s)"
               if failures else None)
    return Listing(distribution, ", ".join(shown(i) for i in where.simple), versions, unasked)


def missing_release(engine: str, version: Version, typed: str) -> str | None:
    """Why ``engine`` at ``version`` (typed as ``typed``) is no release: every index answered and none lists it,
    with the newest there; None where one lists it, the index could not be asked, or the engine has no package."""
    dist = INDEX_NAMES.get(engine)
    if dist is None:
        return None
    found = listing(dist)
    if found.unasked is not None or found.lists(version):
        return None
    newest = f"newest {found.newest}" if found.newest is not None else f"no {dist} release there at all"
    return f"{dist} {typed} is not on the package index ({found.where}); {newest}"


def unasked(engine: str) -> str | None:
    """Why the index could not tell whether a release of ``engine`` exists (None: it could, or the engine has no
    package: llama.cpp's builds are its repository's tags)."""
    dist = INDEX_NAMES.get(engine)
    return listing(dist).unasked if dist is not None else None
