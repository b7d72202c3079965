"""A local stand-in for the Hugging Face Hub's HTTP endpoints, serving real folders from disk.

It answers what ``huggingface_hub`` (the real client) calls, as read in its source (``hf_api.model_info``,
``list_repo_tree``, ``file_download.get_hf_file_metadata`` / ``http_get``, ``utils._http.hf_raise_for_status``):

- ``GET /api/models/{repo}[/revision/{rev}]``: the repo info (``sha``, ``siblings`` with sizes);
- ``GET /api/models/{repo}/tree/{rev}``: the file listing (``snapshot_download``);
- ``HEAD`` / ``GET /{repo}/resolve/{rev}/{file}`` with ``Range``: ``X-Repo-Commit``, ``ETag``, ``X-Linked-Size``;
- errors as the Hub sends them: 401 ``X-Error-Code: RepoNotFound``, 403 ``GatedRepo``, 404 ``RevisionNotFound``
  / ``EntryNotFound``.

Every body byte sent is counted per repo and file, so a test can say how much of the weights travelled.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


@dataclass
class Repo:
    """One repo: a folder on disk at one commit, reachable as ``main`` or by its sha."""

    folder: Path
    gated: bool = False

    @property
    def files(self) -> dict[str, Path]:
        return {p.relative_to(self.folder).as_posix(): p for p in sorted(self.folder.rglob("*")) if p.is_file()}

    @property
    def sha(self) -> str:
        digest = hashlib.sha1()
        for name, path in self.files.items():
            digest.update(name.encode() + hashlib.sha1(path.read_bytes()).digest())
        return digest.hexdigest()


@dataclass
class HubServer:
    """The repos served, the URL, and the body bytes sent: ``sent[(repo, file)]`` (API answers under '')."""

    repos: dict[str, Repo]
    url: str = ""
    sent: Counter[tuple[str, str]] = field(default_factory=Counter)

    def file_bytes(self, repo: str, suffix: str = ".safetensors") -> int:
        """Bytes of ``repo``'s files ending in ``suffix`` sent so far."""
        return sum(n for (r, f), n in self.sent.items() if r == repo and f.endswith(suffix))


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        def _error(self, status: int, code: str, message: str = "") -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message or code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _repo(self, name: str, revision: str | None) -> Repo | None:
            repo = hub.repos.get(name)
            if repo is None:
                self._error(401, "RepoNotFound", "Repository not found")
                return None
            if repo.gated:
                self._error(403, "GatedRepo", "Access to this repo is restricted")
                return None
            if revision not in (None, "main", repo.sha):
                self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
                return None
            return repo

        def _json(self, name: str, data: object, head: bool) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
                hub.sent[(name, "")] += len(body)

        def _serve(self, head: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            if match := re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path):
                repo = self._repo(match[1], match[2])
                if repo is not None:
                    siblings = [{"rfilename": n, "size": p.stat().st_size} for n, p in repo.files.items()]
                    self._json(match[1], {"id": match[1], "sha": repo.sha, "siblings": siblings}, head)
                return
            if match := re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/.*)?", path):
                repo = self._repo(match[1], match[2])
                if repo is not None:
                    listing = [{"type": "file", "path": n, "size": p.stat().st_size,
                                "oid": hashlib.sha1(p.read_bytes()).hexdigest()} for n, p in repo.files.items()]
                    self._json(match[1], listing, head)
                return
            if match := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                repo = self._repo(match[1], match[2])
                if repo is not None:
                    self._file(match[1], repo, match[3], head)
                return
            self._error(404, "EntryNotFound", "no such endpoint")

        def _file(self, name: str, repo: Repo, filename: str, head: bool) -> None:
            path = repo.files.get(filename)
            if path is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("X-Repo-Commit", repo.sha)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = path.read_bytes()
            size = len(data)
            start, end, status = 0, size - 1, 200
            if ranged := re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "")):
                start, end, status = int(ranged[1]), min(int(ranged[2] or size - 1), size - 1), 206
            body = data[start:end + 1]
            self.send_response(status)
            self.send_header("X-Repo-Commit", repo.sha)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Linked-Size", str(size))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(body)))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if not head:
                self.wfile.write(body)
                hub.sent[(name, filename)] += len(body)

    return Handler


@contextmanager
def serve(repos: dict[str, Repo]) -> Iterator[HubServer]:
    """The hub on a free port of 127.0.0.1, stopped on exit."""
    hub = HubServer(repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
