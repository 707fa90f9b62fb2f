"""The disputes page: the questions of a set's states whose labels disagree, the labels side by
side, and a reviewer's settlement of one (an answer, or ambiguous) through
`services.labels.dispute_settle`, which owns who may settle. From htmx the row is swapped for
what it is now (or for itself with the refusal in words); without JavaScript the page reloads."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import settling
from questions.models import QuestionSet, SampleState
from questions.post_forms import DisputeSettleForm, first_error
from questions.selectors import disputes
from questions.selectors.teams import visible_sets

TEMPLATE = "questions/set_disputes.html"


@require_GET
def set_disputes(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's disputed questions, then those settled by a reviewer or marked ambiguous."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    found = disputes.disputes(question_set)
    return render(
        request,
        TEMPLATE,
        {
            "set": question_set,
            "found": found,
            "disputed_total": found.disputed_total,
            "more": found.disputed_total - len(found.disputed),
            "can_settle": roles.may_review(request.user, question_set),
            "blind_to": disputes.blind_to(found, question_set, request.user),
        },
    )


@require_POST
def dispute_settle(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Settle one question of state `pk` with an answer, or mark it ambiguous. A refusal is the
    error page at its status (403, 409, 422), or from htmx the row with the refusal in it."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    sample = get_object_or_404(
        SampleState.objects.select_related("question_set"), pk=pk, question_set=question_set
    )
    form = DisputeSettleForm(request.POST)
    if not form.is_valid():
        raise services.Invalid(f"Nothing was settled: {first_error(form)}")
    data = form.cleaned_data
    try:
        outcome = services.dispute_settle(
            sample=sample,
            question_id=data["question"],
            reviewer=request.user,
            answer=data["answer"],
            ambiguous=data["ambiguous"],
        )
    except services.Refusal as exc:
        row = disputes.dispute(sample, data["question"]) if request.htmx else None
        if row is None:
            raise
        return _row(request, question_set, row, error=f"{exc} Nothing was settled.")
    row = disputes.dispute(sample, data["question"])
    said = (
        f"{sample.name}: `{data['question']}` marked ambiguous; the pass rates leave it out."
        if outcome.status == settling.AMBIGUOUS
        else f"{sample.name}: `{data['question']}` settled as "
        f"{disputes.words(row.question, outcome.answer) if row else outcome.answer}."
    )
    if request.htmx and row is not None:
        return _row(request, question_set, row, saved=said, recount=True)
    messages.success(request, said)
    return redirect(f"{reverse('set-disputes', args=[slug])}#disputed-heading")


def _row(
    request: HttpRequest,
    question_set: QuestionSet,
    row: disputes.Dispute,
    *,
    error: str = "",
    saved: str = "",
    recount: bool = False,
) -> HttpResponse:
    """One dispute's row (200: htmx swaps it in), and with `recount` the page's count of open
    disputes out of band."""
    context: dict[str, Any] = {
        "set": question_set,
        "d": row,
        "error": error,
        "saved": saved,
        "can_settle": roles.may_review(request.user, question_set),
    }
    response = render(request, f"{TEMPLATE}#dispute-row", context)
    if recount:
        count = render(
            request,
            f"{TEMPLATE}#disputed-count",
            {"disputed_total": disputes.disputed_count(question_set), "oob": True},
        )
        response.content += count.content
    return response
