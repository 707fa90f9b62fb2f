"""The one place a view's refused service call becomes a response.

A view that has nothing better to show lets a `Refusal` (or a backend's `DecisionError`)
through; this middleware answers it with the error's own status and words — a JSON body for a
client that asks for JSON, a small fragment for htmx, the error page otherwise (which links back
to the set the address names, when it names one). A 403 is left to Django (`NotAllowed` is a
`PermissionDenied`).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from questions.engine import backends
from questions.models import QuestionSet
from questions.selectors.teams import visible_sets
from questions.services import NotAllowed, Refusal


def status_and_detail(exc: Exception) -> tuple[int, str] | None:
    """The status and words of a refusal this console raises on purpose; None otherwise."""
    if isinstance(exc, Refusal):
        return exc.status, str(exc)
    if isinstance(exc, backends.DecisionError):
        return exc.status, exc.detail
    return None


class ServiceErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, NotAllowed):
            return None  # Django's 403
        mapped = status_and_detail(exc)
        if mapped is None:
            return None
        status, detail = mapped
        if "application/json" in request.headers.get("Accept", ""):
            return JsonResponse({"status": status, "detail": detail}, status=status)
        template = "questions/error.html"
        if getattr(request, "htmx", False):
            template += "#error-detail"
        context = {"status": status, "detail": detail, "set": _set_of(request)}
        return render(request, template, context, status=status)


def _set_of(request: HttpRequest) -> QuestionSet | None:
    """The set the refused address is about (`/sets/<slug>/…`), if there is one the user sees
    (another team's is not named: the refusal says no more than for a set that is not there)."""
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("slug") if match is not None else None
    if not isinstance(slug, str):
        return None
    return visible_sets(request.user).filter(slug=slug).only("slug", "name").first()
