"""Sample states in bulk: the upload of a CSV or JSONL file of states (the import service the
CLI uses) and their download with the expected answers. The labelling page is
`views.labelling`."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import state_files
from questions.selectors import sets
from questions.selectors.teams import visible_sets
from questions.services.errors import require
from questions.services.versions import WRITERS_ONLY


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@require_POST
def states_upload(request: HttpRequest, slug: str) -> HttpResponse:
    """Import an uploaded CSV or JSONL file of sample states, all or nothing; the set page
    then says what was added, relabelled and skipped. A refusal is the error page naming the
    line and what is wrong (4xx), and nothing is imported."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    require(request.user, roles.may_write, WRITERS_ONLY, on=question_set)
    upload = request.FILES.get("states")
    if upload is None:
        raise services.Invalid("Choose a CSV or JSONL file of sample states to import.")
    try:
        rows = state_files.read(
            upload, filename=upload.name, max_records=settings.DECISIONS_UPLOAD_MAX_ROWS
        )
    except state_files.FileError as exc:
        raise services.Invalid(f"{upload.name[:64]}: {exc}. Nothing was imported.") from None
    try:
        report = services.sample_states_import(
            question_set=question_set,
            items=[r.item for r in rows],
            places=[r.where for r in rows],
            author=request.user,
        )
    except services.ServiceError as exc:
        exc.args = (f"{upload.name[:64]}: {exc}. Nothing was imported.",)
        raise
    text = f"Added {_plural(len(report.added), 'sample state')}"
    if report.relabelled:
        names = ", ".join(s.name for s in report.relabelled[:10])
        text += f"; new expected answers on {len(report.relabelled)} ({names})"
    if report.duplicates:
        shown = ", ".join(
            name if name == same else f"{name} (same content as {same})"
            for name, same in report.duplicates[:10]
        )
        more = len(report.duplicates) - 10
        text += f"; skipped {len(report.duplicates)} as duplicates by content: {shown}"
        text += f" and {more} more" if more > 0 else ""
    messages.success(request, text + ".")
    return redirect(f"{question_set.get_absolute_url()}#states-heading")


def _export(request: HttpRequest, slug: str, file_format: str) -> StreamingHttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    write = state_files.csv_lines if file_format == state_files.CSV else state_files.jsonl_lines
    response = StreamingHttpResponse(
        write(sets.state_records(question_set)),
        content_type=f"{state_files.MEDIA_TYPES[file_format]}; charset=utf-8",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{question_set.slug}-states.{file_format}"'
    )
    return response


@require_GET
def states_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The set's sample states with their expected answers and tags, as CSV."""
    return _export(request, slug, state_files.CSV)


@require_GET
def states_jsonl(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The set's sample states with their expected answers and tags, as JSON Lines."""
    return _export(request, slug, state_files.JSONL)
