"""A label's export page: the approved version it points at, how the runtime fetches its
export, and code that calls it (`questions.snippets`) in tabs with copy buttons — and, when
`make run` started the local stand-in, the address and key that run that code here. A read."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from questions import exports
from questions.core import snippets
from questions.dev import standin
from questions.models import IngestSettings
from questions.selectors.teams import visible_sets


@require_GET
def label_export(request: HttpRequest, slug: str, label: str) -> HttpResponse:
    """The export of the approved version label `label` points at, and the code that calls it;
    404 for a label that points at nothing approved (never a fallback)."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    version = exports.exportable_version(slug, label=label)
    if version is None:
        raise Http404("No such label on an approved version.")
    export = exports.export_document(version)
    keep_one_in = IngestSettings.of(question_set).keep_one_in
    fetch_url = request.build_absolute_uri(reverse("api-export", args=[slug]) + f"?label={label}")
    # make run's stand-in serves the runtime's path too, where TYPESAFE_BASE_URL points
    local = settings.DECISIONS_STANDIN and {
        "url": settings.TYPESAFE_BASE_URL,
        "key": standin.KEY,
        "environment": snippets.local_environment(settings.TYPESAFE_BASE_URL, standin.KEY),
    }
    return render(
        request,
        "questions/label_export.html",
        {
            "set": question_set,
            "label": label,
            "version": version,
            "export": export,
            "fetch_url": fetch_url,
            "snippets": snippets.snippets(export, label, keep_one_in),
            "keep_one_in": keep_one_in,
            "report_env": snippets.REPORT_ENV,
            "report_timeout": snippets.REPORT_TIMEOUT_SECONDS,
            "console_url": request.build_absolute_uri("/").rstrip("/"),
            "runtime_env": snippets.RUNTIME_ENV,
            "local": local,
        },
    )
