"""A local PEP 503 simple index: ``GET /simple/{project}/`` lists the files given for it, any other project is 404
(as PyPI answers an unknown name). Each request's path is recorded, so a test can say the index was asked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class SimpleIndex:
    """The files listed per project (canonical name), the index's URL, and the paths asked."""

    projects: dict[str, list[str]]
    url: str = ""
    asked: list[str] = field(default_factory=list)


@contextmanager
def serve_index(projects: dict[str, list[str]]) -> Iterator[SimpleIndex]:
    """Serve ``projects`` (``{"vllm": ["vllm-0.34.0-py3-none-any.whl"]}``) on 127.0.0.1 for the ``with`` block."""
    index = SimpleIndex(projects)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index.asked.append(self.path)
            parts = self.path.strip("/").split("/")
            files = index.projects.get(parts[1]) if len(parts) == 2 and parts[0] == "simple" else None
            if files is None:
                self.send_error(404)
                return
            links = "".join(f'<a href="../../files/{escape(name)}">{escape(name)}</a><br>\n' for name in files)
            body = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released): a connection there is refused."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
