"""The scorecard: is v3 better than v2? Per version and question, pass rates, the controls'
verdicts and what production calls cost."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, OuterRef, Q, Subquery, Sum

from questions.core import controls, metrics, stats
from questions.engine import backends
from questions.models import BatchItem, BatchRun, Decision, QuestionSet, RunReport
from questions.selectors.agreement import label_summaries
from questions.selectors.disputes import ambiguous_counts
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


#: per question (passed, checked)
Rates = dict[str, Any]


def run_rates(runs: list[BatchRun]) -> dict[int, Rates]:
    """Per run (by id), its pass counts per question: read from the test report it
    stored when it finished (`stored_report`, annotated by `scorecard`), whatever its number of
    answers; worked out from its answers (`run_passes`, one query for all of them) for the
    runs that stored none."""
    out: dict[int, Rates] = {}
    for run in runs:
        report = getattr(run, "stored_report", None)
        if report:
            out[run.pk] = {
                "questions": {
                    qid: (passed, checked)
                    for qid, _qtype, checked, passed, *_ in report["questions"]
                    if checked
                },
            }
    computed = run_passes([run for run in runs if run.pk not in out])
    for pk, per_question in computed.items():
        out[pk] = {
            "questions": {
                qid: (sum(results.values()), len(results)) for qid, results in per_question.items()
            },
        }
    return out


#: the control kinds a scorecard reads a verdict from
SCORECARD_CONTROLS = (controls.SHUFFLE, controls.ORDERS)
#: what a control's stored report keeps of each question: `controls.QuestionControl`'s fields
#: but a repeat's spreads (one a state; the scorecard reads no repeat)
FINDING_FIELDS = (
    "question", "qtype", "kind", "varied", "real_checked", "real_passed", "floor_checked",
    "floor_passed", "compared", "flips", "largest_distance",
)  # fmt: skip


def control_calls(run_ids: list[int]) -> dict[int, list[controls.Answered]]:
    """Every answered call of the control runs `run_ids`, by run: one query."""
    answered: dict[int, list[controls.Answered]] = {pk: [] for pk in run_ids}
    items = BatchItem.objects.filter(run__in=run_ids, status=BatchItem.Status.ANSWERED).values_list(
        "run_id", "sample_state__name", "variant", "answers", "sample_state__expected"
    )
    for run_id, name, variant, answers, expected in items:
        answered[run_id].append(controls.Answered(name, variant, answers or {}, expected or {}))
    return answered


def control_findings(
    kind: str, threshold: float, answered: list[controls.Answered]
) -> dict[str, controls.QuestionControl]:
    """What a shuffle or order control found per question, over the questions its answers
    name (with the types they give)."""
    qtypes: dict[str, str] = {}
    for call in answered:
        for qid, answer in call.answers.items():
            qtypes.setdefault(qid, answer.get("type", ""))
    return controls.control_report(kind, qtypes, answered, threshold)


def findings_as_json(found: dict[str, controls.QuestionControl]) -> list[list[Any]]:
    """A control's findings as its report stores them (`services.summaries.store_reports`)."""
    return [[getattr(q, name) for name in FINDING_FIELDS] for q in found.values()]


def stored_findings(runs: list[BatchRun]) -> dict[int, dict[str, controls.QuestionControl]]:
    """Per control run (by id), its findings: read from the report it stored when it finished
    (`stored_report`, annotated by `scorecard`); worked out from its calls (`control_calls`,
    one query for all of them) for the runs that stored none."""
    out = {}
    for run in runs:
        report = getattr(run, "stored_report", None)
        if report and "findings" in report:
            out[run.pk] = {row[0]: controls.QuestionControl(*row) for row in report["findings"]}
    by_pk = {run.pk: run for run in runs}
    for pk, answered in control_calls([pk for pk in by_pk if pk not in out]).items():
        out[pk] = control_findings(by_pk[pk].kind, by_pk[pk].threshold, answered)
    return out


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
    cost, what this set's runs spent, and per question how many states marked ambiguous the
    rates leave out, what its labels settle and how far the labellers agree
    (`agreement.label_summaries`). A fixed number of queries, whatever the number of
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
        .annotate(
            stored_report=Subquery(
                RunReport.objects.filter(run=OuterRef("pk"), against=None).values("data")[:1]
            )
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
    rates = run_rates([r for r in chosen if r.kind == BatchRun.PLAIN])
    findings = stored_findings([r for r in chosen if r.kind != BatchRun.PLAIN])
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
    for per_run in rates.values():
        order += [qid for qid in per_run["questions"] if qid not in order]
    rows = []
    for version in versions:
        run = latest.get((version.pk, BatchRun.PLAIN))
        rated = rates[run.pk] if run else {"questions": {}, "overall": (0, 0)}
        questions: dict[str, dict[str, Any]] = {}
        for qid in order:
            if qid in rated["questions"]:
                questions[qid] = _rate(*rated["questions"][qid])
        checks = []
        for kind in SCORECARD_CONTROLS:
            control = latest.get((version.pk, kind))
            if control is None:
                continue
            report = findings[control.pk]
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
        # the states a reviewer marked ambiguous, per question: no pass rate counts them
        "ambiguous": ambiguous_counts(question_set),
        "labels": [
            {"question": qid, "summary": line} for qid, line in label_summaries(question_set)
        ],
    }
