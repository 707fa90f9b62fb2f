"""Check a pasted document against the contract, without storing anything."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from questions.core import check, spec


@require_http_methods(["GET", "POST"])
def document_check(request: HttpRequest) -> HttpResponse:
    """The limits in force and a validator for a pasted document; htmx swaps in the result."""
    context = {"limits": settings.DECISIONS_LIMITS, "document": "", "result": None, "problem": None}
    if request.method == "POST":
        text = request.POST.get("document", "")
        context["document"] = text
        if not text.strip():
            context["problem"] = (
                "Paste a question set document: a questions map, a request body or an export."
            )
        elif len(text.encode()) > settings.MAX_DOCUMENT_BYTES:
            limit = settings.MAX_DOCUMENT_BYTES // 2**20
            context["problem"] = f"The document is larger than {limit} MiB."
        else:
            try:
                context["result"] = check.validate(
                    spec.loads(text), limits=settings.DECISIONS_LIMITS
                )
            except spec.JSONTextError as exc:
                context["problem"] = f"This is not JSON: {exc}"
    template = "questions/document_check.html"
    if request.htmx:
        template += "#validation-result"
    return render(request, template, context)
