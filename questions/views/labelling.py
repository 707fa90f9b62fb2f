"""The labelling page (`/sets/SLUG/label/`): one state and one question at a time, the states
worth labelling first as this labeller is offered them (`selectors.labels.states_for`), a button
per answer with the key that gives it shown beside it. Each answer is a POST that gives the
labeller's own label (`services.labels.state_label`); `u` takes back their newest label on the
set (`state_label_undo`), whenever the page was opened; with two or more labels needed the
state shown is held for them (`reserve`, always from a POST: a GET never writes).

From htmx the page stays where it is: the labelling part is swapped and the saved answer echoed
in words; the address names the state and the question shown, so a reload shows the same ones.
Without JavaScript each step redirects to the page."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import labelling, spec
from questions.core.numbers import whole_number
from questions.models import QuestionSet, SampleState, Version
from questions.post_forms import LabelPlaceForm, StateLabelForm, first_error
from questions.selectors import disputes, labels
from questions.selectors.teams import visible_sets
from questions.services.errors import require
from questions.services.labels import LABELLERS_ONLY

TEMPLATE = "questions/label_states.html"
#: a labelling session remembers at most this many skipped states (in its address)
MAX_SKIPPED = 200
#: how many of the states worth labelling next the page lists
LISTED = 50
HELD_BY_ANOTHER = "Another labeller holds this state for a few minutes; skip it (s)."


@dataclass(frozen=True)
class Place:
    """Where a labeller is: the version labelled for, the states skipped, and the state and
    question asked for (the address's; the page falls back to the next offered)."""

    version: Version
    skipped: tuple[int, ...] = ()
    state: int | None = None
    question: str = ""

    def url(self, slug: str, **changes: Any) -> str:
        place = replace(self, **changes)
        query = {
            "version": place.version.number,
            "state": place.state,
            "question": place.question,
            "skipped": ",".join(map(str, place.skipped)),
        }
        query = {k: v for k, v in query.items() if v not in (None, "")}
        return f"{reverse('label-states', args=[slug])}?{urlencode(query)}"


def _version(question_set: QuestionSet, raw: Any) -> Version:
    number = whole_number(str(raw), digits=9) if raw not in (None, "") else None
    if raw not in (None, "") and number is None:
        raise services.Invalid(f"The version is a whole number in digits, not {str(raw)[:20]!r}.")
    version = labels.labelling_version(question_set, number)
    if version is None:
        raise Http404(f"{question_set.slug} has no version {number or ''}".strip())
    return version


def _skipped(raw: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in (raw or "").split(","):
        number = whole_number(part.strip())
        if number is not None and number not in out:
            out.append(number)
    return tuple(out[-MAX_SKIPPED:])


@require_GET
def label_states(request: HttpRequest, slug: str) -> HttpResponse:
    """One state at a time, the most telling first (the state and question the address names
    while they are still open to this labeller), the latest answers as a suggestion unless the
    labelling is blind; the ranked list beneath. A read: nothing is held or written here."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    place = Place(
        _version(question_set, request.GET.get("version")),
        _skipped(request.GET.get("skipped", "")),
        whole_number(request.GET.get("state", "") or ""),
        request.GET.get("question", "")[:128],
    )
    return _answer(request, question_set, _page(request, question_set, place))


@require_POST
def label_save(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Give this labeller's answer to one question of state `pk`, then the state's next open
    question, or the next state; the answer echoed in words ("urgency: 2 — now")."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    require(request.user, roles.may_write, LABELLERS_ONLY, on=question_set)
    form = StateLabelForm(request.POST)
    if not form.is_valid():
        raise services.Invalid(f"Nothing was saved: {first_error(form)}")
    data = form.cleaned_data
    version = _version(question_set, data["version"])
    sample = get_object_or_404(SampleState, pk=pk, question_set=question_set)
    saved = services.state_label(
        sample=sample,
        question_id=data["question"],
        answer=data["answer"],
        labeller=request.user,
        version=version.number,
    )
    place = Place(version, _skipped(data["skipped"]), sample.pk)
    context = _page(request, question_set, place, hold=True)
    question = next(q for q in labelling.questions_of(version.document) if q.id == data["question"])
    echo = f"Saved for {sample.name}: {question.said(saved.label.answer)}."
    count = context["progress"].counts.get(question.id, 0)
    said = labelling.unlock(question, count) or labelling.unlocked(question, count)
    if said:
        echo += f" {said[:1].upper()}{said[1:]}."
    if context["progress"].blind:  # given blind: the model's answer may show now
        model = _suggestions(question_set, sample, question)
        if model:
            echo += f" The model answered {model[0]['value']} ({model[0]['source']})."
    return _answer(request, question_set, context, echo=echo)


@require_POST
def label_undo(request: HttpRequest, slug: str) -> HttpResponse:
    """Take back this labeller's newest label on the set (their answer before it, if any, is
    theirs again), however long ago and whatever page they came from; then that question."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    require(request.user, roles.may_write, LABELLERS_ONLY, on=question_set)
    form = LabelPlaceForm(request.POST)
    if not form.is_valid():
        raise services.Invalid(f"Nothing was undone: {first_error(form)}")
    version = _version(question_set, form.cleaned_data["version"])
    skipped = _skipped(form.cleaned_data["skipped"])
    undone = services.state_label_undo(question_set=question_set, labeller=request.user)
    if undone is None:
        place, echo = Place(version, skipped), "Nothing to undo: you have no label on this set."
    else:
        place = Place(version, skipped, undone.sample_state_id, undone.question_id)
        by_id = {q.id: q for q in labelling.questions_of(version.document)}
        question = by_id.get(undone.question_id)
        words = question.said(undone.answer) if question else undone.question_id
        echo = f"Undone for {undone.sample_state.name}: {words}."
    return _answer(request, question_set, _page(request, question_set, place, hold=True), echo=echo)


@require_POST
def label_hold(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Hold state `pk` for this labeller for a few minutes (labels shared out only), so no one
    else spends its last needed label meanwhile: the page asks as it shows the state."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    sample = get_object_or_404(
        SampleState.objects.select_related("question_set"), pk=pk, question_set=question_set
    )
    hold = services.reserve(sample=sample, labeller=request.user)
    if not request.htmx:
        return redirect(Place(_version(question_set, None), state=sample.pk).url(slug))
    context: dict[str, Any] = {"held_until": hold.until if hold else None}
    if hold is None and question_set.labels_needed > 1:
        context["hold_refused"] = HELD_BY_ANOTHER
    return render(request, f"{TEMPLATE}#label-hold", context)


def _answer(
    request: HttpRequest, question_set: QuestionSet, context: dict[str, Any], *, echo: str = ""
) -> HttpResponse:
    """The page, or from htmx its labelling part with the echo out of band; a POST without
    htmx says the echo as a message and goes to the page at the place it reached."""
    if request.method == "POST" and not request.htmx:
        messages.success(request, echo)
        return redirect(context["here_url"])
    if not request.htmx:
        return render(request, TEMPLATE, {**context, "echo": echo})
    response = render(request, f"{TEMPLATE}#labelling", context)
    if request.method == "POST":
        oob = render(request, f"{TEMPLATE}#label-echo", {"echo": echo, "oob": True})
        response.content += oob.content
    return response


def _page(
    request: HttpRequest, question_set: QuestionSet, place: Place, *, hold: bool = False
) -> dict[str, Any]:
    """Everything the page shows at `place`; with `hold` (a POST), the state shown is held for
    this labeller (two or more labels needed)."""
    user, version, slug = request.user, place.version, question_set.slug
    offered = labels.states_for(
        question_set, version, user, skip=place.skipped, wanted=place.state, limit=LISTED + 1
    )
    current = next((o for o in offered if o.pk == place.state), offered[0] if offered else None)
    progress = labels.labelling_progress(question_set, version, viewer=user)
    editable = roles.may_write(user, question_set)
    questions = labelling.questions_of(version.document)
    context: dict[str, Any] = {
        "set": question_set,
        "version": version,
        "versions": question_set.versions.order_by("-number").only(
            "number", "status", "question_set_id"
        ),
        "progress": progress,
        "you": progress.of(user.get_username()) if user.is_authenticated else None,
        "show_model": not progress.blind,
        "listed": offered[:LISTED],
        # the page reads one state past the list: whether more are worth labelling, not how many
        "more": len(offered) > LISTED,
        "total": len(offered) if len(offered) <= LISTED else None,
        "unlocks": labelling.unlocks(questions, progress.counts),
        "editable": editable,
        "skipped": ",".join(map(str, place.skipped)),
        "skipped_count": len(place.skipped),
        "restart_url": Place(version).url(slug),
        "here_url": place.url(slug, state=None, question=""),
        "disputed": disputes.disputed_count(question_set, version),
        "undo": _undo(question_set, user, questions) if editable else None,
    }
    if current is not None:
        asked = place.question if place.question in current.candidate.questions else ""
        question_id = asked or current.candidate.questions[0]
        context.update(_state(question_set, place, current, question_id, not progress.blind))
        context.update(_held(question_set, user, context["sample"], hold and editable))
    return context


def _undo(question_set: QuestionSet, user: Any, questions: list[labelling.Question]) -> dict:
    """What `u` would take back: this labeller's newest current label on the set, in words."""
    last = labels.last_label(question_set, user)
    if last is None:
        return {}
    question = next((q for q in questions if q.id == last.question_id), None)
    words = question.said(last.answer) if question else last.question_id
    return {"state": last.sample_state.name, "said": words}


def _state(
    question_set: QuestionSet,
    place: Place,
    current: labels.Offered,
    question_id: str,
    shown: bool,
) -> dict[str, Any]:
    """The state being labelled: its content, the question asked, the answers with their keys
    and full descriptions, and the recorded answers as a suggestion unless labelling blind."""
    sample = question_set.sample_states.get(pk=current.pk)
    question = next(
        q for q in labelling.questions_of(place.version.document) if q.id == question_id
    )
    suggestions = _suggestions(question_set, sample, question) if shown else []
    suggested = suggestions[0]["value"] if suggestions else None
    document = place.version.document
    asked = document.get(question.id) if isinstance(document, dict) else None
    choices = []
    for (value, _), keys, detail in zip(
        question.choices, question.keys(), question.details, strict=False
    ):
        keyed = bool(keys) and question.type == "score"  # a level's key is its number
        choices.append(
            {
                "value": value,
                "keys": " ".join(keys),
                "key": keys[0] if keys else "",
                "name": "" if keyed else value,
                "detail": detail,
                "suggested": value == suggested,
            }
        )
    reasons = dict(zip(current.candidate.questions, current.candidate.reasons, strict=False))
    return {
        "sample": sample,
        "state_text": json.dumps(sample.state, ensure_ascii=False, indent=2),
        "question": question,
        "instructions": spec.entry_text(asked.get("instructions")) if asked else "",
        "reason": reasons.get(question.id, "") if shown else "",
        "other_questions": [q for q in current.candidate.questions if q != question.id],
        "suggestions": suggestions,
        "choices": choices,
        "here_url": place.url(question_set.slug, state=sample.pk, question=question.id),
        "skip_url": place.url(
            question_set.slug, state=None, question="", skipped=(*place.skipped, sample.pk)
        ),
    }


def _held(question_set: QuestionSet, user: Any, sample: SampleState, hold: bool) -> dict:
    """The hold on the state shown, with two or more labels needed: made now (`hold`, a POST),
    or the one this labeller has, or else the address the page asks for one (htmx, on load)."""
    if question_set.labels_needed <= 1:
        return {}
    if hold:
        sample.question_set = question_set
        made = services.reserve(sample=sample, labeller=user)
        return {"held_until": made.until} if made else {"hold_refused": HELD_BY_ANOTHER}
    until = labels.held_until(sample, user)
    if until is not None and until > timezone.now():
        return {"held_until": until}
    return {"hold_url": reverse("label-hold", args=[question_set.slug, sample.pk])}


def _suggestions(
    question_set: QuestionSet, sample: SampleState, question: labelling.Question
) -> list[dict[str, Any]]:
    """The latest recorded answers to `question` about state `sample`, newest first: who gave
    them, what they read as (one of the question's choices) and how sure they were."""
    out = []
    for r in labels.label_readings(question_set, sample).get(sample.name, []):
        if r.question != question.id:
            continue
        try:
            value = labelling.reading(question.type, r.answer)
        except (KeyError, TypeError, ValueError):
            continue
        confidence = r.answer.get("confidence", r.answer.get("noul"))
        out.append({"source": r.source, "value": value, "confidence": confidence})
    return out
