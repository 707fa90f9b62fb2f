"""A set's production page: how the approved version does on live traffic — production's
answers by day against the labelled states' expected answers, the gaps to label, the near
uniform and unsure shares, and the live pass rate beside the rate on the hand-made states
(`selectors.production` reads it; this view lays it out)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from questions.models import QuestionSet
from questions.selectors.production import production_traffic, question_legend, question_rows


@require_GET
def set_production(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
    found = production_traffic(question_set)
    cards = [
        {"traffic": t, "rows": question_rows(t, found.days), "legend": question_legend(t)}
        for t in found.questions
    ]
    return render(
        request,
        "questions/set_production.html",
        {"set": question_set, "found": found, "cards": cards},
    )
