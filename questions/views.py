"""Thin views: read the request, call spec / a service, render a template or its partial."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from questions import spec

#: Pasted documents larger than this are refused before parsing (a state alone may be 256 KiB).
MAX_PASTE_BYTES = 4 * 1024 * 1024


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The signed-in home page: the limits in force and a validator for a pasted document."""
    return render(request, "questions/home.html", {"limits": settings.DECISIONS_LIMITS})


@require_POST
def document_validate(request: HttpRequest) -> HttpResponse:
    """Validate a pasted document with spec.py; htmx swaps in the result partial."""
    text = request.POST.get("document", "")
    result, problem = None, None
    if not text.strip():
        problem = "Paste a question set document: a questions map, a request body or an export."
    elif len(text.encode()) > MAX_PASTE_BYTES:
        problem = f"The document is larger than {MAX_PASTE_BYTES // (1024 * 1024)} MiB."
    else:
        try:
            result = spec.validate(spec.loads(text), limits=settings.DECISIONS_LIMITS)
        except spec.JSONTextError as exc:
            problem = f"This is not JSON: {exc}"
    template = "questions/home.html"
    if request.htmx:
        template += "#validation-result"
    context = {
        "limits": settings.DECISIONS_LIMITS,
        "document": text,
        "result": result,
        "problem": problem,
    }
    return render(request, template, context)
