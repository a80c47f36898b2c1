"""A small HTTP endpoint on a daemon thread, shared by the worker's health probes and its
Prometheus metrics: GET on a few fixed paths, no logging of requests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A route answers (status code, content type, body).
Route = Callable[[], tuple[int, str, bytes]]


class Endpoint:
    """Serve ``routes`` (path -> answer) on ``address:port`` (port 0 picks a free one)."""

    def __init__(self, address: str, port: int, routes: dict[str, Route], name: str) -> None:
        missing = f"not found: {' or '.join(routes)}\n".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = routes.get(self.path.split("?", 1)[0])
                code, kind, body = route() if route else (404, "text/plain; charset=utf-8", missing)
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # a probe or a scrape every few seconds is not worth a log line

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
