"""A small real HTTP server on 127.0.0.1 for the guarded transports' tests.

``GET /chunks`` answers a chunked body in three parts; ``POST /echo`` answers the request's
body and its ``X-Test`` header; ``GET /stall`` answers nothing until the server stops;
``GET /short`` promises ten bytes, sends five and hangs up. Every request is counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS = (b"first,", b"second,", b"third")


@dataclass
class Server:
    port: int = 0
    paths: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive and chunked answers

        def do_GET(self) -> None:
            server.paths.append(self.path)
            if self.path == "/stall":
                server.stopping.wait(30)
                self.close_connection = True
                return
            if self.path == "/short":
                self.send_response(200)
                self.send_header("Content-Length", "10")
                self.end_headers()
                self.wfile.write(b"12345")
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in CHUNKS:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def do_POST(self) -> None:
            server.paths.append(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(201)
            self.send_header("X-Echo", self.headers.get("X-Test", ""))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running() -> Iterator[Server]:
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
