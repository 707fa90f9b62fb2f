"""One loopback provider for the backend tests: a real HTTP server on 127.0.0.1 that records the
raw bytes of every request and answers what the test queued — or, when nothing is queued, the
default answer (a body, or a function of the request's JSON)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-4f9c2a7e1b"


class Provider:
    """Replies are (status, body, headers, delay, trickle): `delay` seconds before answering;
    `trickle` > 0 sends the body one byte at a time, that many seconds apart."""

    def __init__(self, default: dict | Callable[[Any], dict] | None = None):
        self.default = default if default is not None else {}
        self.replies: list[tuple[int, bytes, dict, float, float]] = []
        self.requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                provider.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "raw": raw, "body": body}
                )
                status, out, headers, delay, trickle = (
                    provider.replies.pop(0) if provider.replies else provider.default_reply(body)
                )
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    chunks = [out[i : i + 1] for i in range(len(out))] if trickle else [out]
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(trickle)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def default_reply(self, body: Any) -> tuple[int, bytes, dict, float, float]:
        out = self.default(body) if callable(self.default) else self.default
        return 200, json.dumps(out).encode(), {}, 0, 0

    def reply(
        self, status: int, body, headers: dict | None = None, delay: float = 0, trickle: float = 0
    ):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.replies.append((status, raw, headers or {}, delay, trickle))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def point_every_wire_at(settings, provider: Provider, timeout: float = 0.5) -> None:
    """Configure typesafe, runtime and openrouter to call `provider` with the test key."""
    settings.TYPESAFE_API_KEY = KEY
    settings.TYPESAFE_BASE_URL = provider.url
    settings.RUNTIME_URL = provider.url
    settings.RUNTIME_TOKEN = KEY
    settings.OPENROUTER_API_KEY = KEY
    settings.OPENROUTER_BASE_URL = provider.url
    settings.DECISIONS_TIMEOUT_SECONDS = timeout
