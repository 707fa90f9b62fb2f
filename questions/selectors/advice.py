"""The advice curves of a version (reads): per noul and choice, precision, recall and coverage of
a threshold over a labelled batch run, as an SVG curve with the stored advice marked. The
designer (`views.advice`) and the review page both show them."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions.core import charts, check, spec, thresholds
from questions.models import BatchRun, Version
from questions.selectors import runs

WHAT = {"noul": "threshold on P(true)", "choice": "minimum confidence"}


def designer_items(version: Version, run: BatchRun | None) -> list[dict[str, Any]]:
    """One item per noul and choice of the version: its advice, the curve over the run's
    labelled answers and the chosen point. Empty when the questions are invalid."""
    result = check.validate(version.document, limits=settings.DECISIONS_LIMITS, lints=False)
    if result.document is None:
        return []
    cases = runs.run_cases(run) if run else []
    advice = version.advice
    items = []
    for qid, question in result.document.questions.items():
        field = spec.ADVICE_FIELDS.get(question.type)
        if field is None:
            continue
        mine = [c for c in cases if c.question == qid and c.qtype == question.type]
        value = advice.get(qid, {}).get(field)
        chosen = None if value is None else thresholds.curve_point(question.type, mine, value)
        points = thresholds.threshold_curve(question.type, mine)
        items.append(
            {
                "id": qid,
                "type": question.type,
                "field": field,
                "what": WHAT[question.type],
                "value": value,
                "labelled": sum(1 for c in mine if c.checked),
                "chosen": chosen,
                "held_out": thresholds.choose_threshold(question.type, mine),
                "points": points,
                "chart": charts.threshold_chart(f"{qid}: {WHAT[question.type]}", points, chosen),
            }
        )
    return items


def labelled_runs(version: Version):
    return version.batch_runs.filter(kind=BatchRun.PLAIN, status=BatchRun.Status.DONE).order_by(
        "-id"
    )


def review_curves(version: Version) -> dict[str, Any]:
    """What the review page's advice section shows: the latest labelled run and the curves."""
    run = labelled_runs(version).first()
    return {"run": run, "items": designer_items(version, run) if version.advice else []}
