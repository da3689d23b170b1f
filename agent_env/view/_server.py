"""The viewer's HTTP server: the page (package data, nothing fetched from elsewhere) and its JSON API.

The standard library's `ThreadingHTTPServer`, so the base install serves it. It binds loopback
unless asked otherwise (`remote=True`: trajectories may hold what a model saw, secrets included),
and, on loopback, answers only requests addressed to a loopback name, so a web page elsewhere cannot
read it through a DNS name rebound to 127.0.0.1.
"""

from __future__ import annotations

import logging
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Self, cast
from urllib.parse import parse_qs, unquote, urlsplit

from agent_env._errors import ArgumentError
from agent_env._origins import binds_loopback, names_loopback
from agent_env.view import _api as api
from agent_env.view._folder import TrajectoryFolder

log = logging.getLogger("agent_env.view")

_STOP_POLL_S = 0.05
"""How often the serving loop looks for `stop()`: socketserver's default, half a second, is what each
stop would wait."""
_PAGE = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/view.js": ("view.js", "text/javascript; charset=utf-8"),
    "/view.css": ("view.css", "text/css; charset=utf-8"),
}
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


class ViewServer:
    """Serves the page over the trajectories in `where` until stopped (`port=0` takes a free port)."""

    def __init__(
        self, where: str | Path, *, host: str = "127.0.0.1", port: int = 0, remote: bool = False
    ) -> None:
        if not remote and not binds_loopback(host):
            raise ArgumentError(
                f"{host} is not a loopback address: the viewer serves only this machine unless "
                "asked to serve beyond it (remote=True; `agent-env view --host` on the command line)"
            )
        self.folder = TrajectoryFolder(where)
        self.remote = remote
        self._httpd = _Server((host, port), self)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        shown = str(host)
        return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"

    def serve_forever(self) -> None:
        try:
            self._httpd.serve_forever(_STOP_POLL_S)
        finally:
            self._httpd.server_close()

    def start(self) -> Self:
        """Serve on a thread of its own (tests, scripts); `stop` ends it."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(_STOP_POLL_S,), name="agent-env-view", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def answer(self, path: str, query: str) -> tuple[HTTPStatus, str, bytes]:
        """Status, content type and body for a GET of `path?query`."""
        if path in _PAGE:
            name, content_type = _PAGE[path]
            page = resources.files("agent_env.view").joinpath("static", name).read_bytes()
            return HTTPStatus.OK, content_type, page
        if path == "/api/episodes":
            try:
                filters = api.Filters.from_query(parse_qs(query, keep_blank_values=True))
            except api.FilterError as exc:
                return _json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return _json(HTTPStatus.OK, api.episodes(self.folder.read(), filters, str(self.folder.path)))
        if path.startswith("/api/episodes/"):
            wanted = unquote(path.removeprefix("/api/episodes/"))
            found = next((r for r in self.folder.read().episodes if r.trajectory.id == wanted), None)
            if found is None:
                return _json(HTTPStatus.NOT_FOUND, {"error": f"no episode '{wanted}' in {self.folder.path}"})
            return _json(HTTPStatus.OK, api.episode(found))
        return _json(HTTPStatus.NOT_FOUND, {"error": f"nothing at {path} (the page is at /)"})


def _json(status: HTTPStatus, body: Any) -> tuple[HTTPStatus, str, bytes]:
    return status, "application/json", api.encoded(body)


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    """The listen backlog (the kernel caps it at net.core.somaxconn): past the standard library's 5,
    a page's burst of connections has its SYNs dropped and each waits seconds to be sent again."""

    def __init__(self, address: tuple[str, int], view: ViewServer) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.view = view
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server_version = "agent-env-view"

    def do_GET(self) -> None:
        view = cast(_Server, self.server).view
        if not view.remote and not self._addressed_to_loopback():
            status, content_type, body = _json(
                HTTPStatus.FORBIDDEN, {"error": "this viewer answers only requests to a loopback address"}
            )
        else:
            url = urlsplit(self.path)
            try:
                status, content_type, body = view.answer(url.path, url.query)
            except Exception:
                log.exception("answering %s failed", self.path)
                status, content_type, body = _json(
                    HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "the viewer failed; its log says why"}
                )
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _addressed_to_loopback(self) -> bool:
        return names_loopback(self.headers.get("Host", ""))

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)
