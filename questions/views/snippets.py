"""A label's export page: the approved version it points at, how the runtime fetches its
export, and code that calls it (`questions.snippets`) in tabs with copy buttons. A read."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from questions import exports
from questions.core import snippets
from questions.models import QuestionSet


@require_GET
def label_export(request: HttpRequest, slug: str, label: str) -> HttpResponse:
    """The export of the approved version label `label` points at, and the code that calls it;
    404 for a label that points at nothing approved (never a fallback)."""
    question_set = get_object_or_404(QuestionSet, slug=slug)
    version = exports.exportable_version(slug, label=label)
    if version is None:
        raise Http404("No such label on an approved version.")
    export = exports.export_document(version)
    fetch_url = request.build_absolute_uri(reverse("api-export", args=[slug]) + f"?label={label}")
    return render(
        request,
        "questions/label_export.html",
        {
            "set": question_set,
            "label": label,
            "version": version,
            "export": export,
            "fetch_url": fetch_url,
            "snippets": snippets.snippets(export, label),
            "runtime_env": snippets.RUNTIME_ENV,
        },
    )
