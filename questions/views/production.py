"""A set's production page: how the approved version does on live traffic — production's
answers by day against the labelled states' expected answers, the gaps to label, the near
uniform and unsure shares, and the live pass rate beside the rate on the hand-made states
(`selectors.production` reads it; this view lays it out)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import redaction
from questions.models import QuestionSet
from questions.post_forms import IngestSettingsForm, first_error
from questions.selectors.production import production_traffic, question_legend, question_rows
from questions.selectors.teams import visible_sets


@require_GET
def set_production(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    return _page(request, question_set)


def _page(
    request: HttpRequest, question_set: QuestionSet, *, typed=None, problem: str = ""
) -> HttpResponse:
    """The page; after a refused change of its settings, with what was typed and why (422)."""
    found = production_traffic(question_set)
    cards = [
        {"traffic": t, "rows": question_rows(t, found.days), "legend": question_legend(t)}
        for t in found.questions
    ]
    return render(
        request,
        "questions/set_production.html",
        {
            "set": question_set,
            "found": found,
            "cards": cards,
            "can_configure": roles.may_review(request.user, question_set),
            "builtins": redaction.BUILTINS,
            "typed": typed,
            "settings_problem": problem,
        },
        status=422 if problem else 200,
    )


@require_POST
def ingest_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """A reviewer changes how the set takes production states (`ingest_configure` owns who
    may, the bounds and whether a redaction rule can work; a refusal changes nothing)."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    form = IngestSettingsForm(request.POST)
    typed = {
        name: request.POST.get(name, "")
        for name in ("keep_one_in", "retention_days", "daily_quota", "drop", "mask")
    } | {"builtins": request.POST.getlist("builtins")}
    if not form.is_valid():
        return _page(request, question_set, typed=typed, problem=first_error(form))
    data = form.cleaned_data
    try:
        services.ingest_configure(
            question_set=question_set,
            user=request.user,
            keep_one_in=data["keep_one_in"],
            retention_days=data["retention_days"],
            daily_quota=data["daily_quota"],
            drop=data["drop"],
            mask=data["mask"],
            builtins=data["builtins"],
        )
    except services.Invalid as exc:
        return _page(request, question_set, typed=typed, problem=str(exc))
    messages.success(request, f"Saved how {question_set.slug} takes production states.")
    return redirect("set-production", question_set.slug)
