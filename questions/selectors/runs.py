"""A run's reads: its cases, tally, test report and tag slices (stored when it finished, else
worked out), its counts and summary, two runs set against each other (the cells that moved,
the paired verdicts) and the stored form of those verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.core.cache import cache
from django.db.models import Case, Count, Exists, F, OuterRef, Q, QuerySet, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from questions.core import deltas, metrics, stats
from questions.engine import backends
from questions.models import BatchItem, BatchRun, RunMove, RunPairing, RunReport, Version
from questions.selectors.disputes import ambiguous_counts

#: an item of a finished run that failed: it got no answer, or one of its answers missed the
#: expected one (`BatchItem.misses`, which the run's summary counts with `metrics.passes`)
FAILING_ITEM = Q(status=BatchItem.Status.FAILED) | Q(misses__gt=0)


def decides_otherwise(first: int, later: Iterable[int], state: Any = None) -> QuerySet[BatchItem]:
    """The answered real calls (variant 0) of the `later` runs whose state's call in run
    `first` decides otherwise (`BatchItem.decided` differs, or either was not worked out):
    the states whose answers may have flipped between them, found without reading an answer
    (one probe of the `item_run_state` index a state). `state`: only those of this state (an
    `OuterRef`, in a subquery). The rule is symmetric: which of two runs is `first` does not
    matter."""
    real = BatchItem.objects.filter(status=BatchItem.Status.ANSWERED, variant=0)
    base = real.filter(run_id=first, state_id=OuterRef("state_id"))
    otherwise = base.filter(Q(decided=None) | ~Q(decided=OuterRef("decided")))
    items = real.filter(run_id__in=list(later))
    if state is not None:
        items = items.filter(state_id=state)
    return items.filter(Q(decided=None) & Exists(base) | Exists(otherwise))


def recorded_moves(first: int, later: Iterable[int]) -> QuerySet[RunMove] | None:
    """The states recorded as deciding otherwise between run `first` and each of `later`
    (`RunMove`, written when the later run of a pair finished); None when a pair has no record
    (`decides_otherwise` then probes the items)."""
    pairs = {(min(first, r), max(first, r)) for r in later}
    found = {
        (a, b): pk
        for pk, a, b in RunPairing.objects.filter(
            first_id__in={a for a, _ in pairs}, second_id__in={b for _, b in pairs}
        ).values_list("pk", "first_id", "second_id")
    }
    if not pairs <= found.keys():
        return None
    return RunMove.objects.filter(pairing_id__in=[found[p] for p in pairs])


def results_order(items: QuerySet[BatchItem]) -> QuerySet[BatchItem]:
    """A run's items in the order its results table lists them: failed states first, then
    those that missed most expected answers, then by state name. A finished run stores each
    item's place in it (`BatchItem.place`, `services.summaries`), which a page reads instead."""
    return items.annotate(
        rank=Case(
            When(status=BatchItem.Status.FAILED, then=Value(0)),
            When(misses__gt=0, then=Value(1)),
            default=Value(2),
        )
    ).order_by("rank", F("misses").desc(nulls_last=True), "sample_state__name", "pk")


def run_cases(run: BatchRun) -> list[metrics.Case]:
    """Every answered (state, question) of a run with what its state expected — the names and
    expected answers of the revisions it asked, not the states' contents: a control's real
    calls (variant 0) only."""
    rows = run.items.filter(status=BatchItem.Status.ANSWERED, variant=0).values_list(
        "sample_state__name", "sample_state__expected", "answers"
    )
    cases = []
    for name, expected, answers in rows:
        expected = expected or {}
        for qid, answer in (answers or {}).items():
            cases.append(metrics.Case(name, qid, answer.get("type", ""), answer, expected.get(qid)))
    return cases


def run_tally(run: BatchRun) -> metrics.Tally:
    """A run's answered items added up (`metrics.Tally`): its summary, test report and tag
    slices in one pass over the answers (the revisions' expected answers and tags, not the
    states' contents), a control's real calls (variant 0) only."""
    tally = metrics.Tally(run.threshold)
    rows = run.items.filter(status=BatchItem.Status.ANSWERED, variant=0).values_list(
        "pk", "sample_state__tags", "sample_state__expected", "answers"
    )
    for pk, tags, expected, answers in rows:
        tally.add(pk, tags, expected, answers)
    return tally


def run_report_computed(run: BatchRun) -> metrics.Report:
    """A run's test report worked out from every answer (`run_tally`)."""
    return run_tally(run).report()


def stored_report(run: BatchRun, against: BatchRun | None = None) -> dict[str, Any] | None:
    """The report a finished run stored (`services.summaries`): its own (`against` None) or
    the run set against `against`; None when it stored none."""
    if not (run.pk and run.finished):
        return None
    return RunReport.objects.filter(run=run, against=against).values_list("data", flat=True).first()


def run_report(run: BatchRun) -> metrics.Report:
    """A run's test report: a finished run's as it stored it when it finished, in constant
    time (migration 0020 stored those of the runs finished before); an unfinished run's, or
    a finished one's that stored none, worked out afresh and not stored: a read never
    writes."""
    data = stored_report(run)
    if data is not None:
        return metrics.report_from_json(data)
    return run_report_computed(run)


def named_misses(misses: list[metrics.Miss]) -> list[metrics.Miss]:
    """`misses` of a run's items with each item's state name in its place (one query)."""
    names = dict(
        BatchItem.objects.filter(pk__in=[m.item for m in misses]).values_list(
            "pk", "sample_state__name"
        )
    )
    return [dataclasses.replace(m, item=names.get(m.item, f"item {m.item}")) for m in misses]


def run_report_and_misses(run: BatchRun) -> tuple[metrics.Report, list[metrics.Miss]]:
    """A run's test report (`run_report`) and the misses it lists, the most confidently wrong
    first (`metrics.Tally.misses_listed`, each named by its state): as a finished run stored
    them, or worked out once for both (never stored: a read never writes)."""
    data = stored_report(run)
    if data is not None and "misses" in data:
        return metrics.report_from_json(data), [metrics.Miss(*row) for row in data["misses"]]
    tally = run_tally(run)
    report = metrics.report_from_json(data) if data is not None else tally.report()
    return report, named_misses(tally.misses_listed())


def run_tag_slices(run: BatchRun) -> list[metrics.Slice]:
    """A run's pass rate per tag of its states: a finished run's as it stored them with its
    report (`services.summaries`), in constant time; otherwise worked out, never stored."""
    data = stored_report(run)
    if data is not None and "tags" in data:
        return [metrics.Slice(*row) for row in data["tags"]]
    return run_tag_slices_computed(run)


def run_tag_slices_computed(run: BatchRun) -> list[metrics.Slice]:
    """`run_tag_slices` from the answers (`run_tally`): the tags as the run asked them (its
    items' revisions'), a control's real calls only."""
    return run_tally(run).slices()


def run_counts(run: BatchRun) -> dict[str, int]:
    counts = {status: 0 for status, _ in BatchItem.Status.choices}
    for row in run.items.values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    counts["total"] = sum(counts.values())
    counts["done"] = counts["answered"] + counts["failed"] + counts["cancelled"]
    return counts


def run_summary(run: BatchRun) -> dict[str, Any]:
    """The run as `questions batch --json` prints it: its counts, pass rates and the misses
    its report lists, the most confidently wrong first."""
    counts = run_counts(run)
    report, misses = run_report_and_misses(run)
    duration = None
    if run.started_at and run.finished_at:
        duration = round((run.finished_at - run.started_at).total_seconds() * 1000)
    return {
        "run": run.pk,
        "set": run.question_set.slug,
        "version": run.version.number,
        "backend": run.backend,
        "calibrated": backends.calibrated(run.backend),
        "status": run.status,
        "states": counts["total"],
        "answered": counts["answered"],
        "failed": counts["failed"],
        "checked": report.checked,
        "passed": report.passed,
        "pass_rate": report.pass_rate,
        "pass_rate_interval": report.pass_rate_interval,
        "per_question": {
            qid: {
                "checked": q.checked,
                "passed": q.passed,
                "pass_rate": q.pass_rate,
                "pass_rate_interval": q.pass_rate_interval,
            }
            for qid, q in report.questions.items()
        },
        "misses": [
            {
                "state": m.item,
                "question": m.question,
                "expected": m.expected,
                "answered": m.answered,
                "wrong_confidence": m.wrong,
            }
            for m in misses
        ],
        "duration_ms": duration,
    }


def latest_run(version: Version | None) -> BatchRun | None:
    if version is None:
        return None
    return (
        version.batch_runs.filter(kind=BatchRun.PLAIN, status=BatchRun.Status.DONE)
        .order_by("-id")
        .first()
    )


#: what a comparison needs of an answer, by question type (its reading and its check)
READING_KEYS = {"choice": "choice", "score": "score", "noul": "noul"}


def run_readings(run: BatchRun, qtypes: dict[str, str]) -> dict[str, tuple[Any, tuple]]:
    """A run's answered states reduced to what a comparison reads: state name → (expected
    answers, per question of `qtypes` the chosen option, the score or P(true), or None), each
    extracted by the database from the stored answers, so no answer's probabilities are
    decoded (see `deltas.compare_readings`)."""
    fields = {  # explicit transforms: a question id may hold "__"
        f"r{i}": KeyTextTransform(READING_KEYS.get(qtype, "noul"), KeyTransform(qid, "answers"))
        for i, (qid, qtype) in enumerate(qtypes.items())
    }
    rows = (
        run.items.filter(status=BatchItem.Status.ANSWERED, variant=0)  # a control's real calls
        .annotate(**fields)
        .values_list("sample_state__name", "sample_state__expected", *fields)
    )
    kinds = [qtype == "choice" for qtype in qtypes.values()]
    return {
        name: (
            expected,
            tuple(
                None if v is None else str(v) if choice else float(v)
                for v, choice in zip(values, kinds, strict=True)
            ),
        )
        for name, expected, *values in rows
    }


def _full_answers(run: BatchRun, states: set[str]) -> dict[str, dict[str, Any]]:
    return dict(
        run.items.filter(
            status=BatchItem.Status.ANSWERED, variant=0, sample_state__name__in=states
        ).values_list("sample_state__name", "answers")
    )


def compared(document: Any) -> dict[str, str]:
    """The questions of a stored document a comparison reads: id → type."""
    if not isinstance(document, dict):
        return {}
    return {
        qid: q["type"]
        for qid, q in document.items()
        if isinstance(q, dict) and q.get("type") in READING_KEYS
    }


def run_delta(
    base: BatchRun, this: BatchRun, document: dict[str, Any], shown: int
) -> deltas.RunDelta:
    """Run `this` against run `base` on the states both answered (the questions of
    `document`): pass rates over the pairs both checked and the cells that moved, regressions
    first, the first `shown` of them with their whole answers (the others with their
    readings). The pair a finished run stored (`services.summaries`: its version's review
    baseline) is read as stored; two other finished runs never change, so their comparison is
    worked out once per process and kept in the cache."""
    data = stored_report(this, base) if base.finished else None
    if data is not None and data["shown"] >= shown and data.get("types") == compared(document):
        return deltas.delta_from_json(data)
    key = None
    if base.finished_at and this.finished_at and base.finished and this.finished:
        stamps = (base.pk, base.finished_at.timestamp(), this.pk, this.finished_at.timestamp())
        key = f"run-delta:{shown}:" + ":".join(map(str, stamps))
        delta = cache.get(key)
        if delta is not None:
            return delta
    delta = run_delta_computed(base, this, document, shown)
    if key:
        cache.set(key, delta, timeout=None)
    return delta


def run_delta_computed(
    base: BatchRun, this: BatchRun, document: dict[str, Any], shown: int
) -> deltas.RunDelta:
    """`run_delta` worked out from both runs' answers."""
    types = compared(document)
    delta = deltas.compare_readings(
        run_readings(base, types),
        run_readings(this, types),
        types,
        this.threshold,
        threshold_before=base.threshold,
    )
    listed = delta.changes[:shown]
    states = {c.state for c in listed}
    before, after = _full_answers(base, states), _full_answers(this, states)
    delta.changes[: len(listed)] = [
        dataclasses.replace(
            c,
            before=(before.get(c.state) or {}).get(c.question) or c.before,
            after=(after.get(c.state) or {}).get(c.question) or c.after,
        )
        for c in listed
    ]
    return delta


def paired_verdicts(run_before: BatchRun, run_after: BatchRun) -> dict[str, stats.Paired]:
    """The paired verdicts of two runs (McNemar's exact test, `stats.paired`, with the change
    of pass rate and its paired interval): under each question id of `run_after`'s version on
    the states both checked, and under "overall" on every question–state pair both checked
    (`with_overall`). Each run reads its nouls at its own threshold. Two finished runs never
    change, so their verdicts are kept in the cache once a process has them: read from the
    report a finished run stored with its review baseline's run (`services.summaries`), else
    worked out."""
    key = None
    if (
        run_before.finished
        and run_after.finished
        and run_before.finished_at
        and run_after.finished_at
    ):
        stamps = (
            run_before.pk,
            run_before.finished_at.timestamp(),
            run_after.pk,
            run_after.finished_at.timestamp(),
            run_after.version.revision,  # a draft's questions (their types) may change
        )
        key = "paired:" + ":".join(map(str, stamps))
        found = cache.get(key)
        if found is not None:
            return found
        data = stored_report(run_after, run_before)  # the pair stored with its review baseline
        if (
            data is not None
            and "paired" in data
            and data.get("types") == compared(run_after.version.document)
        ):
            found = paired_from_json(data["paired"])
            cache.set(key, found, timeout=None)
            return found
    found = paired_verdicts_computed(run_before, run_after)
    if key:
        cache.set(key, found, timeout=None)
    return found


def paired_verdicts_computed(run_before: BatchRun, run_after: BatchRun) -> dict[str, stats.Paired]:
    """`paired_verdicts` from both runs' answers."""
    types = compared(run_after.version.document)
    by_question = deltas.paired_checks(
        run_readings(run_before, types),
        run_readings(run_after, types),
        types,
        run_after.threshold,
        threshold_before=run_before.threshold,
    )
    return with_overall(
        {
            qid: stats.paired([checks[state] for state in sorted(checks)])
            for qid, checks in by_question.items()
        }
    )


def overall(run: BatchRun | None, *, left_out: bool = False) -> stats.Rate | None:
    """A run's overall figure, the one compare, the scorecard and the review page show: its
    pass rate over every question–state pair it checked against an expected answer (stored
    when it finished, `services.summaries`; nothing checked before), with its Wilson interval
    and n; with `left_out`, how many of its states' questions a reviewer marked ambiguous (no
    pass rate counts them; one query). None without a run."""
    if run is None:
        return None
    ambiguous = 0
    if left_out:
        ambiguous = sum(ambiguous_counts(run.question_set_id, run=run).values())
    return stats.Rate(run.passed or 0, run.checked or 0, ambiguous)


def with_overall(per_question: dict[str, stats.Paired]) -> dict[str, stats.Paired]:
    """Per-question paired verdicts with, first, the overall one: all of them added up
    (`stats.pooled`), on every question–state pair both runs checked — the pairs `overall`
    counts, so the verdict, its difference and the two pass rates speak of one figure."""
    return {"overall": stats.pooled(per_question.values()), **per_question}


#: a paired verdict as a stored report holds it
PAIRED_FIELDS = ("n", "passed_before", "passed_after", "better", "worse", "p_value")


def paired_as_json(found: dict[str, stats.Paired]) -> list[list[Any]]:
    """Paired verdicts as rows (a list keeps their order; PostgreSQL's jsonb sorts keys)."""
    return [[key, *(getattr(p, f) for f in PAIRED_FIELDS)] for key, p in found.items()]


def paired_from_json(rows: list[list[Any]]) -> dict[str, stats.Paired]:
    """The stored verdicts; the overall one added up from the questions' (`with_overall`), as
    the reports stored before it counted question–state pairs kept a per-state one."""
    return with_overall({key: stats.Paired(*values) for key, *values in rows if key != "overall"})
