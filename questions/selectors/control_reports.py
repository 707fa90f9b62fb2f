"""Reads of control and drift runs: what their report sections, `questions controls --json` and
`questions drift --json` show. The arithmetic is `questions.controls`'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Case, When

from questions.core import check, controls, invariance, metrics
from questions.models import BatchItem, BatchRun
from questions.selectors import runs


def is_control(run: BatchRun) -> bool:
    return run.kind in controls.KINDS


def invariance_report(run: BatchRun) -> dict[str, dict[str, invariance.Check]]:
    """An invariance control's verdicts per question and check, read from its record."""
    result = check.validate(run.version.document, limits=settings.DECISIONS_LIMITS, lints=False)
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
        **runs.run_summary(run),
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
    result = check.validate(run.version.document, limits=settings.DECISIONS_LIMITS, lints=False)
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
        **runs.run_summary(run),  # "answered" and "failed" count calls
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


def noise_run(run: BatchRun) -> BatchRun | None:
    """The repeatability run whose spread is a drift run's noise floor: the latest one of the
    same version on its baseline's model that had finished when the drift run was made (so a
    drift run's report does not change after it)."""
    if run.baseline is None:
        return None
    return (
        BatchRun.objects.filter(
            version_id=run.version_id,
            kind=controls.REPEAT,
            model=run.baseline.model,
            status=BatchRun.Status.DONE,
            finished_at__lte=run.created_at,
        )
        .order_by("-finished_at", "-pk")
        .first()
    )


def noise_floor(question_set: Any, versions: Iterable[Any] = ()) -> controls.NoiseFloor | None:
    """The noise floor flips and deltas are read against: the latest finished repeatability
    control of one of `versions`, else of the set; None when the set has none."""
    versions = [v.pk for v in versions if v is not None]
    run = (
        BatchRun.objects.filter(
            question_set=question_set, kind=controls.REPEAT, status=BatchRun.Status.DONE
        )
        .annotate(compared=Case(When(version_id__in=versions, then=1), default=0))
        .order_by("-compared", "-id")  # one query: the compared versions' first
        .first()
    )
    if run is None:
        return None
    # a finished control never changes: its floor is worked out once per process (compare
    # reads it on every page, and a repeat of 2,000 states is R × 2,000 answers to decode)
    key = f"noise-floor:{run.pk}:{run.finished_at.timestamp() if run.finished_at else ''}"
    found = cache.get(key) if run.finished_at else None
    if found is None:
        found = controls.noise_floor(run.pk, control_report(run))
        if run.finished_at:
            cache.set(key, found, timeout=None)
    return found


def drift_of(run: BatchRun) -> controls.Drift | None:
    """A drift run against its baseline; None when its baseline is gone."""
    if run.baseline is None:
        return None
    repeat = noise_run(run)
    floors = (
        controls.noise_floors(control_report(repeat), f"repeat run {repeat.pk}") if repeat else {}
    )
    return controls.drift(runs.run_cases(run.baseline), runs.run_cases(run), run.threshold, floors)


def _interval(report: metrics.Report, qid: str) -> list[float] | None:
    found = report.questions.get(qid)
    return found.pass_rate_interval if found else None


def drift_summary(run: BatchRun) -> dict[str, Any]:
    """A drift run as `questions drift --json` prints it."""
    found = drift_of(run)
    out: dict[str, Any] = {
        **runs.run_summary(run),
        "model": run.model,
        "baseline": None,
    }
    if found is None:
        return out
    out.update(
        baseline={
            "run": run.baseline.pk,
            "model": run.baseline.model,
            "checked": found.before.checked,
            "passed": found.before.passed,
            "pass_rate": found.before.pass_rate,
            "pass_rate_interval": found.before.pass_rate_interval,
        },
        compared=found.compared,
        flips=found.flips,
        flip_rate=found.flip_rate,
        shifts=found.shifts,
        shift_rate=found.shift_rate,
        pass_rate_delta=controls.delta(found.before.pass_rate, found.after.pass_rate),
        calibration=found.calibration(),
        per_question={
            qid: {
                "type": q.qtype,
                "compared": q.compared,
                "flip_rate": q.flip_rate,
                "flipped_states": q.flips,
                "shifts": len(q.shifts),
                "shifted_states": [shift.as_json() for shift in q.shifts],
                "noise_floor": q.noise_floor,
                "noise_floor_source": q.floor_source,
                "pass_rate_before": q.pass_before,
                "pass_rate_before_interval": _interval(found.before, qid),
                "pass_rate_after": q.pass_after,
                "pass_rate_after_interval": _interval(found.after, qid),
                "pass_rate_delta": controls.delta(q.pass_before, q.pass_after),
            }
            for qid, q in found.questions.items()
        },
        paired={
            key: verdict.as_dict()
            for key, verdict in runs.paired_verdicts(run.baseline, run).items()
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
            "default_floor": controls.SHIFT_NOISE_FLOOR,
            "paired": runs.paired_verdicts(run.baseline, run)["overall"] if found else None,
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
