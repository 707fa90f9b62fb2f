"""The scorecard: is v3 better than v2? Per version and question, pass rates, the controls'
verdicts and what production calls cost."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Q, Sum

from questions.core import controls, metrics, stats
from questions.engine import backends
from questions.models import BatchItem, BatchRun, Decision, QuestionSet
from questions.selectors.runs import overall as run_overall


def run_passes(runs: list[BatchRun]) -> dict[int, dict[str, dict[str, bool]]]:
    """Per run (by id), per question, per state whether its real answer (variant 0) passed the
    state's expected one: one query for all the runs, whatever their number."""
    thresholds = {run.pk: run.threshold for run in runs}
    out: dict[int, dict[str, dict[str, bool]]] = {pk: {} for pk in thresholds}
    items = BatchItem.objects.filter(
        run__in=list(thresholds), status=BatchItem.Status.ANSWERED, variant=0
    ).values_list("run_id", "sample_state__name", "sample_state__expected", "answers")
    for run_id, name, expected, answers in items:
        for qid, answer in (answers or {}).items():
            case = metrics.Case(
                name, qid, answer.get("type", ""), answer, (expected or {}).get(qid)
            )
            if case.checked:
                ok = metrics.passes(case.qtype, answer, case.expected, thresholds[run_id])
                out[run_id].setdefault(qid, {})[name] = ok
    return out


#: the control kinds a scorecard reads a verdict from
SCORECARD_CONTROLS = (controls.SHUFFLE, controls.ORDERS)
#: what a scorecard prices: this many production calls
CALLS_PRICED = 1000


def _rate(passed: int, n: int) -> dict[str, Any]:
    return {
        "pass_rate": round(passed / n, stats.PLACES) if n else None,
        "pass_rate_interval": stats.interval_list(passed, n),
        "n": n,
        "passed": passed,
        "words": stats.rate_words(passed, n),
    }


def _overall(run: BatchRun | None) -> dict[str, Any] | None:
    """A version's overall figure: its run's, as compare and the review page show it
    (`runs.overall`: every question–state pair with an expected answer)."""
    figure = run_overall(run)
    return None if figure is None else _rate(figure.passed, figure.checked)


def _run_ref(run: BatchRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "run": run.pk,
        "backend": run.backend,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "try": run.live_questions is not None,
        "live_questions": run.live_questions,
    }


def scorecard(question_set: QuestionSet) -> dict[str, Any]:
    """Is v3 better than v2? Per version (newest first, kept and approved marked): the overall
    figure of the version's latest finished full run on the default backend (`runs.overall`),
    and per question its pass rate with its interval and n, the verdicts of its latest shuffle
    and order controls, the cost of `CALLS_PRICED` production calls at what that run's calls
    cost, and what this set's runs spent. A fixed number of queries, whatever the number of
    versions, runs or states."""
    versions = list(
        question_set.versions.select_related("author")
        .defer("document_text", "advice_text")
        .order_by("-number")
    )
    labels: dict[int, list[str]] = {}
    for name, version_id in question_set.labels.order_by("name").values_list("name", "version_id"):
        labels.setdefault(version_id, []).append(name)
    runs = (
        BatchRun.objects.filter(
            question_set=question_set,
            status=BatchRun.Status.DONE,
            kind__in=[BatchRun.PLAIN, *SCORECARD_CONTROLS],
            tag="",
        )
        .only(
            "id",
            "version_id",
            "kind",
            "backend",
            "threshold",
            "live_questions",
            "finished_at",
            "checked",
            "passed",
        )
        .order_by("-id")
    )
    latest: dict[tuple[int, str], BatchRun] = {}
    for run in runs:
        if run.kind == BatchRun.PLAIN and run.backend != backends.DEFAULT:
            continue
        latest.setdefault((run.version_id, run.kind), run)
    chosen = list(latest.values())
    plain_ids = [r.pk for r in chosen if r.kind == BatchRun.PLAIN]
    passes = run_passes([r for r in chosen if r.kind == BatchRun.PLAIN])
    answered: dict[int, list[controls.Answered]] = {}
    qtypes: dict[int, dict[str, str]] = {}
    control_items = BatchItem.objects.filter(
        run__in=[r.pk for r in chosen if r.kind != BatchRun.PLAIN],
        status=BatchItem.Status.ANSWERED,
    ).values_list("run_id", "sample_state__name", "variant", "answers", "sample_state__expected")
    for run_id, name, variant, answers, expected in control_items:
        answered.setdefault(run_id, []).append(
            controls.Answered(name, variant, answers or {}, expected or {})
        )
        for qid, answer in (answers or {}).items():
            qtypes.setdefault(run_id, {}).setdefault(qid, answer.get("type", ""))
    costs = {
        row["run_id"]: row
        for row in BatchItem.objects.filter(run__in=plain_ids, decision__isnull=False)
        .values("run_id")
        .annotate(cost=Avg("decision__cost"), calls=Count("decision"))
    }
    spent = Decision.objects.filter(
        pk__in=BatchItem.objects.filter(run__question_set=question_set).values("decision_id"),
        backend__in=list(backends.LIVE),
    ).aggregate(
        total=Sum("cost"), calls=Count("pk"), unpriced=Count("pk", filter=Q(cost__isnull=True))
    )
    newest = versions[0] if versions else None
    order = list(newest.document) if newest else []
    for per_run in passes.values():
        order += [qid for qid in per_run if qid not in order]
    rows = []
    for version in versions:
        run = latest.get((version.pk, BatchRun.PLAIN))
        per_question = passes.get(run.pk, {}) if run else {}
        questions: dict[str, dict[str, Any]] = {}
        for qid in order:
            if qid not in per_question:
                continue
            results = per_question[qid]
            questions[qid] = _rate(sum(results.values()), len(results))
        checks = []
        for kind in SCORECARD_CONTROLS:
            control = latest.get((version.pk, kind))
            if control is None:
                continue
            report = controls.control_report(
                kind, qtypes.get(control.pk, {}), answered.get(control.pk, []), control.threshold
            )
            checks.append((kind, control, report))
            for qid, found in report.items():
                cell = questions.setdefault(
                    qid,
                    {
                        "pass_rate": None,
                        "pass_rate_interval": None,
                        "n": 0,
                        "passed": 0,
                        "words": "no run",
                    },
                )
                if kind == controls.SHUFFLE and found.no_signal is not None:
                    cell["no_signal"] = found.no_signal
                    cell["few_answers"] = found.few_answers
                    cell["shuffle_run"] = control.pk
                if kind == controls.ORDERS and found.flip_rate is not None and found.varied:
                    cell["order_flip_rate"] = round(found.flip_rate, stats.PLACES)
                    cell["order_compared"] = found.compared
                    cell["orders_run"] = control.pk
        cost = costs.get(run.pk) if run else None
        per_call = cost["cost"] if cost else None
        rows.append(
            {
                "version": version.number,
                "status": version.status,
                "status_display": version.get_status_display(),
                "kept": version.is_kept,
                "approved": version.is_approved,
                "labels": labels.get(version.pk, []),
                "author": version.author.get_username(),
                "run": _run_ref(run),
                "overall": _overall(run),
                "questions": questions,
                "controls": {
                    kind: {
                        "run": control.pk,
                        "title": controls.TITLES[kind],
                        "no_signal": sorted(q for q, f in report.items() if f.no_signal),
                    }
                    for kind, control, report in checks
                },
                "cost_per_call": per_call,
                "cost_per_1000_calls": None if per_call is None else per_call * CALLS_PRICED,
                "priced_calls": cost["calls"] if cost else 0,
            }
        )
    return {
        "set": question_set.slug,
        "backend": backends.DEFAULT,
        "questions": [qid for qid in order if any(qid in r["questions"] for r in rows)],
        "price_per_million_input_tokens": settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS,
        "calls_priced": CALLS_PRICED,
        "spent": {
            "cost": spent["total"] or 0.0,
            "calls": spent["calls"],
            "unpriced_calls": spent["unpriced"],
        },
        "versions": rows,
    }
