"""Sample states: create, edit (JSON checked as typed), duplicate, delete, history."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import roles, services
from questions.core import labelling, spec
from questions.core.numbers import whole_number
from questions.models import QuestionSet, SampleState
from questions.post_forms import SampleStateForm, first_error
from questions.selectors import labels
from questions.selectors.teams import visible_sets, visible_states
from questions.services.errors import require
from questions.services.versions import WRITERS_ONLY

TEMPLATE = "questions/samplestate_form.html"


def _labelled_for(question_set: QuestionSet, raw: Any) -> Any:
    """The version the state's expected answers are for: `?version=N` (or the form's field),
    else the newest valid version (`labels.labelling_version`)."""
    number = whole_number(raw, digits=9) if isinstance(raw, str) and raw else None
    return labels.labelling_version(question_set, number) or labels.labelling_version(question_set)


def _questions(version: Any) -> list[dict[str, Any]]:
    """The questions of `version` that take an expected answer, with their choices."""
    if version is None:
        return []
    return [
        {"id": q.id, "type": q.type, "choices": list(q.choices)}
        for q in labelling.questions_of(version.document)
    ]


def _state_check(text: str) -> dict[str, Any]:
    """The typed state: its value, or what is wrong, and its size against the limit."""
    limit = settings.DECISIONS_LIMITS.max_state_bytes
    if not text.strip():
        return {"state_error": "Type a JSON value (null is a value).", "size": 0, "limit": limit}
    try:
        value = spec.loads(text)
    except spec.JSONTextError as exc:
        return {"state_error": f"Not JSON: {exc}", "size": None, "limit": limit}
    errors = spec.validate_state(value, limits=settings.DECISIONS_LIMITS)
    message = errors[0].message if errors else ""
    wire = spec.provider_refusals(state=value)
    try:
        size = len(spec.canonical_json(value))
    except (ValueError, TypeError, RecursionError):
        size = None
    return {
        "state_error": f"{message[:1].upper()}{message[1:]}." if errors else None,
        "state_warning": f"{wire[0].message[:1].upper()}{wire[0].message[1:]}." if wire else None,
        "size": size,
        "limit": limit,
        "value": value,
    }


def _expected_from_post(post, questions: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The expected answers the form sends, and what is wrong with them ("" when nothing)."""
    expected: dict[str, Any] = {}
    problem = ""
    for q in questions:
        raw = post.get(f"expected-{q['id']}", "")
        if raw == "":
            continue
        if q["type"] == "score":
            number = whole_number(raw, digits=9)
            expected[q["id"]] = raw if number is None else number
            if number is None and not problem:
                problem = (
                    f"The expected answer for `{q['id']}` is a level number "
                    f"(0, 1, 2 … in ASCII digits), not {raw[:20]!r}."
                )
        elif q["type"] == "noul":
            expected[q["id"]] = raw == "true"
        else:
            expected[q["id"]] = raw
    return expected, problem


def _expected_for_form(expected: dict[str, Any]) -> dict[str, str]:
    return {k: (json.dumps(v) if isinstance(v, bool) else str(v)) for k, v in expected.items()}


def _form(
    request, question_set, sample, *, text, name, tags, expected, revision, status=200, problem=None
):
    labelled_for = _labelled_for(
        question_set, request.POST.get("version") or request.GET.get("version", "")
    )
    questions = _questions(labelled_for)
    shown = _expected_for_form(expected)
    for q in questions:
        q["expected"] = shown.get(q["id"], "")
    context = {
        "set": question_set,
        "sample": sample,
        "text": text,
        "name": name,
        "tags": ", ".join(tags),
        "questions": questions,
        "revision": revision,
        "problem": problem,
        "editable": roles.may_write(request.user, question_set),
        "newest": question_set.versions.order_by("-number").only("number").first(),
        "labelled_for": labelled_for,
        "versions": question_set.versions.order_by("-number").only(
            "number", "status", "question_set_id"
        ),
        **_state_check(text),
    }
    return render(request, TEMPLATE, context, status=status)


@require_http_methods(["GET", "POST"])
def state_create(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    if request.method == "GET":
        require(request.user, roles.may_write, WRITERS_ONLY, on=question_set)
        return _form(
            request, question_set, None, text="{}", name="", tags=[], expected={}, revision=0
        )
    return _save(request, question_set, None)


@require_http_methods(["GET", "POST"])
def state_edit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    sample = get_object_or_404(
        visible_states(request.user).select_related("question_set"), pk=pk, question_set__slug=slug
    )
    if request.method == "GET":
        text = json.dumps(sample.state, ensure_ascii=False, indent=2)
        return _form(
            request,
            sample.question_set,
            sample,
            text=text,
            name=sample.name,
            tags=sample.tags,
            expected=sample.expected,
            revision=sample.revision,
        )
    return _save(request, sample.question_set, sample)


def _save(request, question_set: QuestionSet, sample: SampleState | None) -> HttpResponse:
    require(request.user, roles.may_write, WRITERS_ONLY, on=question_set)
    form = SampleStateForm(request.POST)
    form.is_valid()
    fields = form.cleaned_data
    text = request.POST.get("state", "")
    name, tags = fields.get("name", ""), fields.get("tags", [])
    labelled_for = _labelled_for(question_set, request.POST.get("version", ""))
    shown = _questions(labelled_for)
    expected, unreadable = _expected_from_post(request.POST, shown)
    if sample is not None:  # the answers for questions this version lacks stay as they are
        ids = {q["id"] for q in shown}
        expected = {k: v for k, v in sample.expected.items() if k not in ids} | expected
    revision = fields.get("base_revision", -1)
    checked = _state_check(text)
    keep = {"text": text, "name": name, "tags": tags, "expected": expected, "revision": revision}
    problem = checked["state_error"] or first_error(form) or unreadable
    if problem:
        return _form(
            request,
            question_set,
            sample,
            status=422,
            problem=f"Nothing was saved: {problem}",
            **keep,
        )
    try:
        sample = _store(request.user, question_set, sample, checked["value"], keep)
    except services.ServiceError as exc:
        return _form(request, question_set, sample, status=exc.status, problem=str(exc), **keep)
    messages.success(request, f"Saved sample state {sample.name} (revision {sample.revision}).")
    if request.POST.get("then") == "another":
        return redirect("state-create", question_set.slug)
    return redirect("state-edit", question_set.slug, sample.pk)


def _store(
    user: Any, question_set: QuestionSet, sample: SampleState | None, value: Any, keep: dict
) -> SampleState:
    """Create the state, or update `sample` from the revision the form was based on."""
    if sample is None:
        return services.sample_state_create(
            question_set=question_set,
            name=keep["name"],
            state=value,
            author=user,
            expected=keep["expected"],
            tags=keep["tags"],
        )
    return services.sample_state_update(
        sample=sample,
        name=keep["name"],
        state=value,
        author=user,
        base_revision=keep["revision"],
        expected=keep["expected"],
        tags=keep["tags"],
    )


@require_POST
def state_check(request: HttpRequest, slug: str) -> HttpResponse:
    """As the author types the state: its size against the limit, or what is wrong (of a set
    the user sees: another team's is not there)."""
    get_object_or_404(visible_sets(request.user).only("pk"), slug=slug)
    checked = _state_check(request.POST.get("state", ""))
    return render(request, TEMPLATE + "#state-status", checked)


@require_POST
def state_duplicate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    sample = get_object_or_404(visible_states(request.user), pk=pk, question_set__slug=slug)
    require(request.user, roles.may_write, WRITERS_ONLY, on=sample.question_set)
    copy = services.sample_state_duplicate(sample=sample, author=request.user)
    messages.success(request, f"Duplicated {sample.name} as {copy.name}.")
    return redirect("state-edit", slug, copy.pk)


@require_POST
def state_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    sample = get_object_or_404(visible_states(request.user), pk=pk, question_set__slug=slug)
    require(request.user, roles.may_write, WRITERS_ONLY, on=sample.question_set)
    try:
        services.sample_state_delete(sample=sample, author=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("state-edit", slug, pk)
    messages.success(request, f"Deleted sample state {sample.name}.")
    return redirect("set-detail", slug)


@require_GET
def state_history(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    sample = get_object_or_404(
        visible_states(request.user).select_related("question_set"), pk=pk, question_set__slug=slug
    )
    revisions = sample.revisions.select_related("author")
    return render(
        request,
        "questions/samplestate_history.html",
        {"set": sample.question_set, "sample": sample, "revisions": revisions},
    )
