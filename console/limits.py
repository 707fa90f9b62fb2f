"""Request bounds: the body size a request may send (with a clear 413 page), and the client
address sign-in throttling counts failures by."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.defaults import bad_request as django_bad_request


def too_large(request: HttpRequest, limit: int) -> HttpResponse:
    return render(
        request,
        "413.html",
        {"limit_kib": limit // 1024},
        status=413,
    )


#: the application's API: bearer tokens, no session, no form; each view bounds what it reads
#: (the production states' endpoint reads at most DECISIONS__INGEST_MAX_BYTES, and answers a
#: larger body with a JSON 413 of its own)
API_PREFIX = "/api/"


class UploadLimitMiddleware:
    """A request that is not signed in (the sign-in form) may send 64 KiB, not the size of the
    largest document; a declared body above the limit gets the 413 page before it is read. The
    API (`API_PREFIX`) bounds its own bodies."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.ANONYMOUS_UPLOAD_MAX_BYTES and not request.path_info.startswith(
            API_PREFIX
        ):  # only then ask who is sending it
            limit = (
                settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                if request.user.is_authenticated
                else settings.ANONYMOUS_UPLOAD_MAX_BYTES
            )
            if declared > limit:
                return too_large(request, limit)
        return self.get_response(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 400, except a body over DATA_UPLOAD_MAX_MEMORY_SIZE: that is a 413 page."""
    if isinstance(exception, RequestDataTooBig):
        return too_large(request, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return django_bad_request(request, exception)


def client_address(request: HttpRequest) -> str | None:
    """The address sign-in failures are counted by: the peer, or behind the proxy
    (DJANGO_BEHIND_PROXY) the address the proxy appended to X-Forwarded-For."""
    if settings.BEHIND_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last
    return request.META.get("REMOTE_ADDR")
