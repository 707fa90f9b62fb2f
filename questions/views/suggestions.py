"""Suggest rewordings, on the page: the form on a question's card (loaded when it is opened,
with the question's latest suggestion), the plan (the calls and their cost, before anything is
asked), the start (a task), its progress with cancel and the candidates as they are proven —
read from its record, so opening it again costs nothing — and "Use this", which makes a draft."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from questions import roles, services
from questions.core import rewording
from questions.engine import backends
from questions.models import BatchRun, Suggestion, Version
from questions.post_forms import SuggestForm, SuggestionApplyForm, first_error
from questions.selectors import suggestions as reads
from questions.selectors.teams import visible_versions
from questions.services import suggestions

TEMPLATE = "questions/_suggest.html"
PAGE = "questions/suggestion_detail.html"
_SLOT = "suggest"


def _into(value: str | None) -> str:
    """The id of the slot a partial replaces: `suggest` or `suggest-<card key>` (letters,
    digits and dashes only: it lands in an attribute and a CSS selector)."""
    text = (value or _SLOT)[:64]
    return text if text.replace("-", "").isalnum() and text.startswith(_SLOT) else _SLOT


def _version(request: HttpRequest, slug: str, number: int) -> Version:
    return get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )


def _problem(request: HttpRequest, problem: str, into: str) -> HttpResponse:
    # 200: htmx swaps it in where the plan would go
    return render(request, TEMPLATE + "#suggest-plan", {"problem": problem, "into": into})


@require_GET
def suggest_launch(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The form that plans a suggestion for a question, and its latest suggestion. Reads
    only."""
    version = _version(request, slug, number)
    question = request.GET.get("question") or ""
    run_id, failing = reads.failing_by_question(version)
    latest = reads.latest_suggestion(version, question)
    context = {
        "set": version.question_set,
        "version": version,
        "question": question,
        "into": _into(request.GET.get("into")),
        "run": BatchRun.objects.filter(pk=run_id).first() if run_id else None,
        "failing": failing.get(question, 0),
        "live_backends": [b.name for b in backends.available() if b.live],
        "can_ask": roles.may_ask_live(request.user, version.question_set),
        "candidates": rewording.DEFAULT_CANDIDATES,
        "most_candidates": rewording.MAX_CANDIDATES,
        "max_calls": suggestions.DEFAULT_MAX_CALLS,
        **(_shown(request, latest) if latest else {}),
    }
    return render(request, TEMPLATE + "#suggest-launch", context)


def _planned(request: HttpRequest, slug: str, number: int):
    version = _version(request, slug, number)
    form = SuggestForm(request.POST)
    if not form.is_valid():
        return None, _into(request.POST.get("into")), first_error(form)
    given = form.cleaned_data
    plan = suggestions.suggestion_plan(
        version=version,
        question=given["question"],
        user=request.user,
        backend=given["backend"],
        candidates=given["candidates"] or rewording.DEFAULT_CANDIDATES,
        max_calls=given["max_calls"] or suggestions.DEFAULT_MAX_CALLS,
    )
    return plan, _into(given["into"]), ""


@require_POST
def suggest_plan(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """What suggesting would ask — the calls and their cost — before anything is asked."""
    try:
        plan, into, problem = _planned(request, slug, number)
    except services.NotAllowed:
        raise  # Django's 403: a reader may not ask
    except services.Refusal as exc:
        return _problem(request, str(exc), _into(request.POST.get("into")))
    if problem:
        return _problem(request, problem, into)
    context = {"plan": plan, "into": into, "version": plan.version}
    return render(request, TEMPLATE + "#suggest-plan", context)


@require_POST
def suggest_start(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Start the planned suggestion: recorded, and queued for a worker; its progress replaces
    the plan."""
    try:
        plan, into, problem = _planned(request, slug, number)
        if problem:
            return _problem(request, problem, into)
        made = suggestions.suggestion_start(plan=plan, user=request.user)
    except services.NotAllowed:
        raise
    except services.Refusal as exc:
        return _problem(request, str(exc), _into(request.POST.get("into")))
    return render(request, TEMPLATE + "#suggestion", {**_shown(request, made), "into": into})


def _shown(request: HttpRequest, suggestion: Suggestion) -> dict:
    """What the suggestion partial shows of it, to whom."""
    return {
        "view": reads.suggestion_view(suggestion),
        "suggestion": suggestion,
        "can_ask": roles.may_ask_live(request.user, suggestion.version.question_set),
        "can_write": roles.may_write(request.user, suggestion.version.question_set),
    }


def _suggestion(request: HttpRequest, pk: int) -> Suggestion:
    """A suggestion of a set of the user's teams (another team's is not there)."""
    teams = roles.readable_teams(request.user)
    found = Suggestion.objects.all()
    if teams is not None:
        found = found.filter(version__question_set__team__in=teams)
    return get_object_or_404(
        found.select_related("version__question_set", "run", "applied_version", "created_by"),
        pk=pk,
    )


@require_GET
def suggestion_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A suggestion: its progress while it runs, its candidates as they are proven (the
    partial a card polls; the whole page otherwise). Reads the record only."""
    suggestion = _suggestion(request, pk)
    context = {**_shown(request, suggestion), "into": _into(request.GET.get("into"))}
    if request.htmx:
        return render(request, TEMPLATE + "#suggestion", context)
    return render(request, PAGE, {**context, "set": suggestion.version.question_set})


@require_POST
def suggestion_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    suggestion = suggestions.suggestion_cancel(
        suggestion=_suggestion(request, pk), user=request.user
    )
    context = {**_shown(request, suggestion), "into": _into(request.POST.get("into"))}
    return render(request, TEMPLATE + "#suggestion", context)


@require_POST
def suggestion_apply(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Use this": a new draft holding the candidate, where it came from on its record."""
    suggestion = _suggestion(request, pk)
    form = SuggestionApplyForm(request.POST)
    back = suggestion.version.get_absolute_url()
    if not form.is_valid():
        messages.error(request, first_error(form))
        return redirect(back)
    number = form.cleaned_data["candidate"]
    try:
        made = suggestions.suggestion_apply(
            suggestion=suggestion, number=number, author=request.user
        )
    except services.NotAllowed:
        raise
    except services.Refusal as exc:
        messages.error(request, f"Not used: {exc}")
        return redirect(back)
    messages.success(
        request, f"v{made.number} holds candidate {number}: {made.events.first().note}"
    )
    if request.htmx:
        return HttpResponseClientRedirect(made.get_absolute_url())
    return redirect(made)
