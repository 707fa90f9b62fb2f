"""A set's scorecard: per version and question, the pass rate with its interval and n, the
controls' verdicts and the cost (`scorecard.scorecard` builds it; this view lays it out)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from questions.core import controls
from questions.selectors import scorecard
from questions.selectors.teams import visible_sets


@require_GET
def set_scorecard(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    card = scorecard.scorecard(question_set)
    rows = [
        {**row, "cells": [(qid, row["questions"].get(qid)) for qid in card["questions"]]}
        for row in card["versions"]
    ]
    return render(
        request,
        "questions/set_scorecard.html",
        {
            "set": question_set,
            "card": card,
            "rows": rows,
            "columns": [(qid, card["ambiguous"].get(qid, 0)) for qid in card["questions"]],
            "no_signal_words": controls.NO_SIGNAL,
            "few_answers": controls.FEW_ANSWERS,
            "calls_priced": f"{card['calls_priced']:,}",
            "labels": [(line["question"], line["summary"]) for line in card["labels"]],
        },
    )
