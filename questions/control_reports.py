"""Reads of control and drift runs: what their report sections, `questions controls --json` and
`questions drift --json` show. The arithmetic is `questions.controls`'s."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions import controls, invariance, selectors, spec
from questions.models import BatchItem, BatchRun


def is_control(run: BatchRun) -> bool:
    return run.kind in controls.KINDS


def invariance_report(run: BatchRun) -> dict[str, dict[str, invariance.Check]]:
    """An invariance control's verdicts per question and check, read from its record."""
    result = spec.validate(run.version.document, limits=settings.DECISIONS_LIMITS, lints=False)
    if result.document is None:
        return {}
    calls = run.items.filter(status=BatchItem.Status.ANSWERED).values_list(
        "sample_state__name", "variant", "answers"
    )
    return invariance.report(result.document.questions, calls)


def invariance_summary(run: BatchRun) -> dict[str, Any]:
    """An invariance control as `questions controls --invariance --json` prints it: the shape
    of every control's, with per question and check its verdict."""
    report = invariance_report(run)
    broken = sorted(
        qid for qid, checks in report.items() if any(c.holds is False for c in checks.values())
    )
    types = question_types(run)
    return {
        **selectors.run_summary(run),
        "states": run.items.filter(variant=0).count(),
        "control": {
            "kind": run.kind,
            "title": invariance.TITLE,
            "count": run.control_count,
            "seed": run.control_seed,
            "calls": run.items.count(),
            "tolerance": invariance.TOLERANCE,
            "broken": broken,
            "questions": {
                qid: {
                    "type": types.get(qid),
                    "checks": {name: c.as_json() for name, c in checks.items()},
                }
                for qid, checks in report.items()
            },
        },
    }


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
    if run.kind == invariance.KIND:
        report = invariance_report(run)
        return {
            "run": run,
            "kind": run.kind,
            "title": invariance.TITLE,
            "checks": [(name, invariance.PROMISES[name]) for name in invariance.CHECKS],
            "rows": [
                (qid, [checks.get(name) for name in invariance.CHECKS])
                for qid, checks in report.items()
            ],
            "tolerance": invariance.TOLERANCE,
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
