"""A set's agreement page: per question of the version its states are labelled for, how far the
labellers agree (κ or α with its interval and n), each labeller and the model against the
settled answers, and the states settled, disputed and ambiguous (`selectors.agreement` reads
it; this view lays it out)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from questions.selectors.agreement import kept_agreement
from questions.selectors.teams import visible_sets


@require_GET
def set_agreement(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    return render(
        request,
        "questions/set_agreement.html",
        {"set": question_set, "found": kept_agreement(question_set)},
    )
