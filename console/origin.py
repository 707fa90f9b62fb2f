"""Where a request comes from, for the audit log (`questions.services.audit.origin`): the web
or the API, and the client's address (behind the proxy, the one it appended: the address
sign-in throttling counts by)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from console.limits import client_address
from questions.services.audit import Origin, origin


class AuditOriginMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        via = "api" if request.path.startswith("/api/") else "web"
        token = origin.set(Origin(via=via, address=_address(client_address(request))))
        try:
            return self.get_response(request)
        finally:
            origin.reset(token)


def _address(text: str | None) -> str | None:
    """An IP address as the log keeps it; None for anything else (a proxy's header is text)."""
    try:
        return str(ipaddress.ip_address((text or "").strip()))
    except ValueError:
        return None
