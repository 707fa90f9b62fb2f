"""Records (`.jevl`): a run's recordings as a download, and an upload on the set page that keeps
records as recordings (`questions.services.records`)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from questions.core import records
from questions.selectors.teams import visible_runs, visible_sets
from questions.services import records as record_services


@require_GET
def run_records(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """The run's answered decisions, one `.jevl` line each, streamed as they are read."""
    run = get_object_or_404(visible_runs(request.user).select_related("question_set"), pk=pk)
    writer = record_services.RecordWriter(record_services.recordings_of(run=run))
    response = StreamingHttpResponse(writer, content_type=f"{records.MEDIA_TYPE}; charset=utf-8")
    name = record_services.records_filename(run.question_set, run=run)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_POST
def records_upload(request: HttpRequest, slug: str) -> HttpResponse:
    """Import an uploaded `.jevl` file into the set: the page then says what was imported. A
    refusal (a bad line, questions of no version) is the error page naming the line."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    report = record_services.records_import(
        question_set=question_set, lines=request.FILES.get("records"), user=request.user
    )
    versions = ", ".join(f"v{n}: {c}" for n, c in sorted(report.by_version.items()))
    text = (
        f"Imported {report.imported} record{'s' if report.imported != 1 else ''}"
        + (f" ({versions})" if versions else "")
        + f"; {report.skipped} skipped (recorded already)."
    )
    if report.unlinked_states:
        text += (
            f" {report.unlinked_states} name a state that is no sample state of this set; "
            "they replay for that state's content."
        )
    messages.success(request, text)
    return redirect(f"{question_set.get_absolute_url()}#records-heading")
