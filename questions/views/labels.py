"""Sample states in bulk and labelled fast: the upload of a CSV or JSONL file of states (the
import service the CLI uses), their download with the expected answers, and the labelling page
(one state at a time, the states worth labelling first: `questions.labelling`)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import labelling, state_files
from questions.core.numbers import whole_number
from questions.models import QuestionSet, SampleState, Version
from questions.post_forms import StateLabelForm, first_error
from questions.selectors import disputes, labels, sets
from questions.services.errors import require
from questions.services.versions import WRITERS_ONLY

#: a labelling session remembers at most this many skipped states (in its address)
MAX_SKIPPED = 200


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@require_POST
def states_upload(request: HttpRequest, slug: str) -> HttpResponse:
    """Import an uploaded CSV or JSONL file of sample states, all or nothing; the set page
    then says what was added, relabelled and skipped. A refusal is the error page naming the
    line and what is wrong (4xx), and nothing is imported."""
    question_set = get_object_or_404(QuestionSet, slug=slug)
    require(request.user, roles.may_write, WRITERS_ONLY)
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


def _export(slug: str, file_format: str) -> StreamingHttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
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
    return _export(slug, state_files.CSV)


@require_GET
def states_jsonl(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The set's sample states with their expected answers and tags, as JSON Lines."""
    return _export(slug, state_files.JSONL)


# --- the labelling page ------------------------------------------------------------------------


def _version(question_set: QuestionSet, raw: Any) -> Version:
    number = whole_number(raw, digits=9) if raw not in (None, "") else None
    if raw not in (None, "") and number is None:
        raise services.Invalid(f"The version is a whole number in digits, not {str(raw)[:20]!r}.")
    version = labels.labelling_version(question_set, number)
    if version is None:
        raise Http404(f"{question_set.slug} has no version {number or ''}".strip())
    return version


def _skipped(raw: str) -> list[int]:
    out = []
    for part in (raw or "").split(","):
        number = whole_number(part.strip())
        if number is not None and number not in out:
            out.append(number)
    return out[-MAX_SKIPPED:]


def _page_url(slug: str, **params: Any) -> str:
    query = {k: v for k, v in params.items() if v not in (None, "", [])}
    if isinstance(query.get("skipped"), list):
        query["skipped"] = ",".join(map(str, query["skipped"]))
    url = reverse("label-states", args=[slug])
    return f"{url}?{urlencode(query)}" if query else url


def _suggestions(question: labelling.Question, readings: list[labelling.Reading]) -> list[dict]:
    """The latest recorded answers to `question`, newest first: who gave them, what they read
    as (one of the question's choices) and how sure they were. Shown, never filled in."""
    out = []
    for r in readings:
        if r.question != question.id:
            continue
        try:
            value = labelling.reading(question.type, r.answer)
        except (KeyError, TypeError, ValueError):
            continue
        confidence = r.answer.get("confidence", r.answer.get("noul"))
        out.append({"source": r.source, "value": value, "confidence": confidence})
    return out


@require_GET
def label_states(request: HttpRequest, slug: str) -> HttpResponse:
    """One state at a time, the most telling first, with the latest answers as a suggestion;
    the ranked list beneath. A read: recorded answers only, never a call."""
    question_set = get_object_or_404(QuestionSet, slug=slug)
    version = _version(question_set, request.GET.get("version"))
    skipped = _skipped(request.GET.get("skipped", ""))
    candidates = labels.states_to_label(question_set, version, limit=None)
    pks = dict(
        question_set.sample_states.filter(name__in=[c.name for c in candidates]).values_list(
            "name", "pk"
        )
    )
    wanted = whole_number(request.GET.get("state", "") or "")
    current = next((c for c in candidates if pks.get(c.name) == wanted), None)
    if current is None:
        current = next((c for c in candidates if pks.get(c.name) not in skipped), None)
    questions = labelling.questions_of(version.document)
    counts = labelling.label_counts(
        questions, (e or {} for e in question_set.sample_states.values_list("expected", flat=True))
    )
    context: dict[str, Any] = {
        "set": question_set,
        "version": version,
        "versions": question_set.versions.order_by("-number").only(
            "number", "status", "question_set_id"
        ),
        "candidates": [{"c": c, "pk": pks.get(c.name)} for c in candidates[:50]],
        "more": max(0, len(candidates) - 50),
        "total": len(candidates),
        "unlocks": labelling.unlocks(questions, counts),
        "editable": roles.may_write(request.user),
        "skipped_count": len(skipped),
        "restart_url": _page_url(slug, version=version.number),
        "disputed": disputes.disputed_count(question_set, version),
    }
    undo = _undo_offer(question_set, request.GET.get("last", ""))
    if undo is not None:
        context["undo"] = undo
    if current is not None:
        sample = question_set.sample_states.get(pk=pks[current.name])
        by_id = {q.id: q for q in questions}
        context.update(_labelling(question_set, version, sample, current, by_id, skipped))
    return render(request, "questions/label_states.html", context)


def _undo_offer(question_set: QuestionSet, last: str) -> dict[str, int] | None:
    """The save `last` names (`<state>-<revision>`), offered for undoing only while it is still
    the state's latest: once undone (or changed elsewhere) a reload or the back button would
    lead to the stale-revision refusal."""
    last_pk, _, last_revision = last.partition("-")
    undo = (whole_number(last_pk), whole_number(last_revision))
    if (
        None not in undo
        and question_set.sample_states.filter(pk=undo[0], revision=undo[1]).exists()
    ):
        return {"state": undo[0], "revision": undo[1]}
    return None


def _labelling(
    question_set: QuestionSet,
    version: Version,
    sample: SampleState,
    current: labelling.Candidate,
    by_id: dict[str, labelling.Question],
    skipped: list[int],
) -> dict[str, Any]:
    """The state being labelled: its content, the question asked, the recorded answers as
    suggestions and the choices with their keys."""
    question = by_id[current.questions[0]]
    readings = labels.label_readings(question_set, names=[sample.name]).get(sample.name, [])
    suggestions = _suggestions(question, readings)
    suggested = suggestions[0]["value"] if suggestions else None
    keys = ["t", "f"] if question.type == "noul" else [str(i + 1) for i in range(9)]
    skip = [*skipped, sample.pk]
    return {
        "sample": sample,
        "state_text": json.dumps(sample.state, ensure_ascii=False, indent=2),
        "question": question,
        "reason": current.reason,
        "other_questions": current.questions[1:],
        "suggestions": suggestions,
        "choices": [
            {
                "value": value,
                "text": text,
                "key": keys[i] if i < len(keys) else "",
                "suggested": value == suggested,
            }
            for i, (value, text) in enumerate(question.choices)
        ],
        "skip_url": _page_url(question_set.slug, version=version.number, skipped=skip),
        "skipped": ",".join(map(str, skipped)),
    }


@require_POST
def label_save(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Save one expected answer (or undo the last save) through the state form's service,
    history kept; then the next question of the state, or the next state."""
    question_set = get_object_or_404(QuestionSet, slug=slug)
    require(request.user, roles.may_write, WRITERS_ONLY)
    form = StateLabelForm(request.POST)
    if not form.is_valid():
        raise services.Invalid(f"Nothing was saved: {first_error(form)}")
    data = form.cleaned_data
    version = _version(question_set, request.POST.get("version"))
    sample = get_object_or_404(SampleState, pk=pk, question_set=question_set)
    skipped = _skipped(data["skipped"])
    if data["action"] == "undo":
        sample = services.sample_state_label_undo(
            sample=sample, author=request.user, revision=data["base_revision"]
        )
        messages.success(request, f"Undone: {sample.name} has the expected answers it had before.")
        return redirect(_page_url(slug, version=version.number, state=sample.pk, skipped=skipped))
    return _label_answer(request, question_set, version, sample, data, skipped)


def _label_answer(
    request: HttpRequest,
    question_set: QuestionSet,
    version: Version,
    sample: SampleState,
    data: dict[str, Any],
    skipped: list[int],
) -> HttpResponse:
    """Save the answer `data` gives to its question, say what it unlocked, and go on."""
    question = next(
        (q for q in labelling.questions_of(version.document) if q.id == data["question"]), None
    )
    if question is None:
        raise services.Invalid(
            f"Nothing was saved: v{version.number} has no question "
            f"{data['question'][:32]!r} that takes an expected answer."
        )
    answer = question.value(data["answer"])
    if answer is None:
        raise services.Invalid(
            f"Nothing was saved: {question.refusal(data['answer'], version.number)}."
        )
    before = sample.revision
    sample = services.sample_state_label(
        sample=sample,
        question_id=question.id,
        answer=answer,
        author=request.user,
        base_revision=data["base_revision"],
    )
    text = f"Saved: {sample.name} expects {data['answer']} for `{question.id}`."
    count = labelling.label_counts(
        [question], (e or {} for e in question_set.sample_states.values_list("expected", flat=True))
    )[question.id]
    said = labelling.unlock(question, count) or labelling.unlocked(question, count)
    if said:
        text += f" {said[:1].upper()}{said[1:]}."
    messages.success(request, text)
    last = f"{sample.pk}-{sample.revision}" if sample.revision != before else None
    url = _page_url(
        question_set.slug, version=version.number, state=sample.pk, skipped=skipped, last=last
    )
    return redirect(url)
