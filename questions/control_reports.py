"""Reads of control and drift runs: what their report sections, `questions controls --json` and
`questions drift --json` show. The arithmetic is `questions.controls`'s."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions import controls, selectors, spec
from questions.models import BatchItem, BatchRun


def is_control(run: BatchRun) -> bool:
    return run.kind in controls.KINDS


def question_types(run: BatchRun) -> dict[str, str]:
    """The run's questions and their types, in declared order."""
    result = spec.validate(run.version.document, limits=settings.DECISIONS_LIMITS, lints=False)
    if result.document is None:
        return {}
    return {qid: q.type for qid, q in result.document.questions.items()}


def control_answered(run: BatchRun) -> list[controls.Answered]:
    """Every answered call of a control: its state's name, variant, answers and the state's
    expected answers (not the state's contents)."""
    items = run.items.filter(status=BatchItem.Status.ANSWERED).values_list(
        "sample_state__name", "variant", "answers", "sample_state__expected"
    )
    return [
        controls.Answered(name, variant, answers or {}, expected or {})
        for name, variant, answers, expected in items
    ]


def control_report(run: BatchRun) -> dict[str, controls.QuestionControl]:
    return controls.control_report(
        run.kind, question_types(run), control_answered(run), run.threshold
    )


def control_summary(run: BatchRun) -> dict[str, Any]:
    """A control run as `questions controls --json` prints it: the run's summary (of its real
    calls) and, per question, what the control found."""
    report = control_report(run)
    return {
        **selectors.run_summary(run),  # "answered" and "failed" count calls
        "states": run.items.filter(variant=0).count(),
        "control": {
            "kind": run.kind,
            "title": controls.TITLES[run.kind],
            "count": run.control_count,
            "seed": run.control_seed,
            "calls": run.items.count(),
            "no_signal": sorted(qid for qid, q in report.items() if q.no_signal),
            "questions": {qid: q.as_json() for qid, q in report.items()},
        },
    }


def drift_of(run: BatchRun) -> controls.Drift | None:
    """A drift run against its baseline; None when its baseline is gone."""
    if run.baseline is None:
        return None
    return controls.drift(
        selectors.run_cases(run.baseline), selectors.run_cases(run), run.threshold
    )


def drift_summary(run: BatchRun) -> dict[str, Any]:
    """A drift run as `questions drift --json` prints it."""
    found = drift_of(run)
    out: dict[str, Any] = {
        **selectors.run_summary(run),
        "model": run.model,
        "baseline": None,
    }
    if found is None:
        return out
    out.update(
        baseline={
            "run": run.baseline.pk,
            "model": run.baseline.model,
            "pass_rate": found.before.pass_rate,
        },
        compared=found.compared,
        flips=found.flips,
        flip_rate=found.flip_rate,
        pass_rate_delta=controls.delta(found.before.pass_rate, found.after.pass_rate),
        calibration=found.calibration(),
        per_question={
            qid: {
                "type": q.qtype,
                "compared": q.compared,
                "flip_rate": q.flip_rate,
                "flipped_states": q.flips,
                "pass_rate_before": q.pass_before,
                "pass_rate_after": q.pass_after,
                "pass_rate_delta": controls.delta(q.pass_before, q.pass_after),
            }
            for qid, q in found.questions.items()
        },
    )
    return out


def section(run: BatchRun) -> dict[str, Any] | None:
    """What the run page shows of a control's or a drift run's report (None for a plain run)."""
    if is_control(run):
        report = control_report(run)
        return {
            "run": run,
            "kind": run.kind,
            "title": controls.TITLES[run.kind],
            "questions": list(report.values()),
            "no_signal": [q.question for q in report.values() if q.no_signal],
            "few": any(q.few_answers for q in report.values() if q.no_signal),
            "no_signal_words": controls.NO_SIGNAL,
            "margin": controls.CLEAR_MARGIN,
        }
    if run.kind == "drift":
        found = drift_of(run)
        return {
            "run": run,
            "kind": run.kind,
            "drift": found,
            "pass_rate_delta": controls.delta(found.before.pass_rate, found.after.pass_rate)
            if found
            else None,
            "calibration": found.calibration() if found else {},
        }
    return None


def latest_verdicts(version: Any) -> list[dict[str, Any]]:
    """The latest finished shuffle control and order-sensitivity run of a version, each with
    the questions it flags: no signal (shuffle), answers that flipped with the order (orders)."""
    out = []
    for kind in (controls.SHUFFLE, controls.ORDERS):
        run = (
            version.batch_runs.filter(kind=kind, status=BatchRun.Status.DONE)
            .select_related("version")
            .order_by("-id")
            .first()
        )
        if run is None:
            out.append({"kind": kind, "title": controls.TITLES[kind], "run": None})
            continue
        report = control_report(run)
        out.append(
            {
                "kind": kind,
                "title": controls.TITLES[kind],
                "run": run,
                "no_signal": [q for q in report.values() if q.no_signal],
                "clear": [q for q in report.values() if q.no_signal is False],
                "flipped": [q for q in report.values() if q.varied and q.flips],
                "steady": [q for q in report.values() if q.varied and q.compared and not q.flips],
            }
        )
    return out
