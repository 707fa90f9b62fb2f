"""The preview panel: ask the questions on the page (saved or not) about a sample state or a
typed one, live or recorded, and render the answers as bar charts."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from questions import forms, services
from questions.core import charts, metrics, spec
from questions.core.numbers import whole_number
from questions.engine import backends
from questions.models import SampleState
from questions.selectors.teams import visible_versions
from questions.views import editor

TEMPLATE = "questions/_preview_result.html"


def _result(request, **context) -> HttpResponse:
    return render(request, TEMPLATE, context)


def _error(request, status: int, detail: str) -> HttpResponse:
    return _result(request, error=backends.DecisionError(status, detail))


@require_POST
def version_preview(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Ask the questions on the page: a live backend for authors and reviewers (the service
    refuses anyone else), recordings for everyone."""
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    if request.POST.getlist("q"):
        edited = forms.document_from_cards(editor.posted_cards(request.POST, version))
        if not edited.representable:
            return _error(request, 422, "Nothing was sent: fix what is marked in the editor.")
        document = edited.document
    else:  # a read-only version: its fields are disabled, so ask what is stored
        document = version.document
    sample, revision = None, None
    choice = request.POST.get("preview_state", "")
    if choice:
        pk = whole_number(choice)
        if pk is None:
            return _error(request, 422, f"preview_state names no sample state ({choice[:40]!r}).")
        sample = get_object_or_404(SampleState, pk=pk, question_set=version.question_set)
        state = sample.state
        revision = sample.current_revision()
    else:
        try:
            state = spec.loads(request.POST.get("preview_state_json", ""))
        except spec.JSONTextError as exc:
            return _error(request, 422, f"The typed state is not JSON ({exc}); null is a value.")
    outcome = services.decision_ask(
        backend=request.POST.get("preview_backend", "recorded"),
        document=document,
        state=state,
        model=request.POST.get("preview_model", "").strip() or None,
        user=request.user,
        version=version,
        sample_state=revision,
    )
    rendered = _answers(outcome, (revision.expected if revision else None) or {})
    return _result(request, outcome=outcome, error=outcome.error, answers=rendered, sample=sample)


def _answers(outcome: backends.Outcome, expected: dict[str, Any]) -> list[dict[str, Any]]:
    """Each answer with its chart and, where the state expects one that fits, whether it
    passed."""
    rendered = []
    if outcome.checked and outcome.ask:
        for qid, answer in outcome.checked.answers.items():
            question = outcome.ask.questions[qid]
            wanted = expected.get(qid)
            fits = wanted is not None and metrics.expected_fits(question.type, wanted)
            rendered.append(
                {
                    "id": qid,
                    "type": question.type,
                    "answer": answer,
                    "chart": charts.chart_for(question, answer),
                    "expected": wanted if fits else None,
                    "passed": metrics.passes(question.type, answer, wanted) if fits else None,
                }
            )
    return rendered
