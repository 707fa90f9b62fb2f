"""Logs as JSON lines on stdout: one line per request (method, path, status, duration, user id,
request id) and whatever the console and Django log, 500s with their traceback.

A request id comes from the `X-Request-ID` header when it is a plain token (a proxy's), or is
made here; it is on every line logged while the request is served and in the response header.
The formatter replaces any configured secret (provider keys, tokens, the secret key, database
passwords) in a line before it is written, in every form `scrub` knows.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse

from questions.engine.backends.base import scrub

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
log = logging.getLogger("console.request")


class JSONFormatter(logging.Formatter):
    """A record as one JSON object: time, level, logger, message, request id, the request's
    fields when the record carries them, and the traceback of an exception; no secret."""

    FIELDS = ("method", "path", "status", "duration_ms", "user_id")

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get(),
        }
        for name in self.FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        elif record.exc_text:
            line["traceback"] = record.exc_text
        from console.reporting import configured_secrets  # settings are loaded by now

        secrets = configured_secrets()
        for name in ("message", "traceback"):
            if name in line:
                line[name] = scrub(line[name], *secrets)
        return json.dumps(line, ensure_ascii=False, default=str)


class RequestLogMiddleware:
    """Gives each request an id and logs one line when it is answered. First in the chain, so
    its duration covers every other middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get("X-Request-ID", "")
        rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        token = request_id.set(rid)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = rid
            user = getattr(request, "user", None)
            status = response.status_code
            log.log(
                logging.ERROR if status >= 500 else logging.INFO,
                "%s %s %s",
                request.method,
                request.path,
                status,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "user_id": user.pk if user is not None and user.is_authenticated else None,
                },
            )
            return response
        finally:
            request_id.reset(token)
