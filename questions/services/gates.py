"""The CI gate (`questions gate`): a batch run of a label's approved version over the set's
labelled sample states — through the batch engine, in the foreground, the `recorded` backend by
default (no network, no key) — measured for `questions.gate`'s rules, which judge it.

What is measured: per question the labelled answers passed and missed and the labelled states
it got no answer for; the calibration of the run's nouls and choices (`questions.metrics`); how
many states decided otherwise than in the run the version was approved on
(`Version.approved_evidence_run`); and the mean cost of the calls that answered the states — the
run's own calls, or for a replay the recorded calls it replays (the newest answered call of the
version's questions about each state through the replayed wire), each costed by
`answers.cost_of` at the wire's price.
"""

from __future__ import annotations

from typing import Any

from questions.core import answers, check, deltas, gate, metrics, spec
from questions.engine import backends
from questions.engine.backends.http import TypeSafeBackend
from questions.engine.backends.recorded import RecordedBackend
from questions.models import BatchItem, BatchRun, Decision, Version
from questions.selectors import lints as lint_reads
from questions.selectors import runs
from questions.selectors.disputes import ambiguous_counts
from questions.services.batch_execution import batch_execute
from questions.services.batches import batch_create, labelled_for
from questions.services.errors import Invalid
from questions.services.versions import limits


class NothingToGate(Invalid):
    """The version has no labelled sample state to gate on."""

    code = "nothing_to_gate"


def _wire_backend(name: str) -> Any:
    """The live backend whose wire (and price) a backend's calls went through: a replay's
    source, or the backend itself."""
    try:
        chosen = backends.get(name)
    except backends.DecisionError as exc:
        raise Invalid(exc.detail, code="unknown_backend") from None
    return chosen.source if isinstance(chosen, RecordedBackend) else chosen


def gate_model(version: Version, backend: str) -> str | None:
    """The model a gate asks: the one frozen with the approval (the export's model) on the
    wire it was frozen for — typesafe, or its replay — else the backend's own default."""
    if version.approved_model and _wire_backend(backend).name == TypeSafeBackend.name:
        return version.approved_model
    return None


def gate_run(
    *,
    version: Version,
    backend: str,
    user: Any,
    bounds: gate.Bounds,
    strict_lints: bool = False,
) -> tuple[BatchRun, gate.Result]:
    """Run `version` over its set's labelled states through `backend` in this process, and
    judge the run by `bounds` — and, with `strict_lints`, by the version's lints: a warning
    open (not accepted with a reason) fails it. `NothingToGate` when no state expects an
    answer of the version's questions; a live backend's refusals (`NotConfigured`, …) as
    `batch_create` raises them."""
    problem = bounds.problem()
    if problem:
        raise Invalid(problem, code="bad_bound")
    parsed = check.validate(version.document, limits=limits(), lints=False).document
    questions = parsed.questions if parsed else {}
    expected = version.question_set.sample_states.values_list("expected", flat=True)
    if not any(labelled_for(e, questions) for e in expected):
        raise NothingToGate(
            f"{version.question_set.slug} has no sample state with an expected answer of "
            f"version {version.number}'s questions: there is nothing to gate on."
        )
    run = batch_create(
        version=version,
        backend=backend,
        user=user,
        model=gate_model(version, backend),
        labelled=True,
        enqueue=False,
        kind=gate.KIND,
    )
    batch_execute(run.pk)
    run.refresh_from_db()
    return run, gate.judge(gate_measure(run, questions), bounds, gate_lints(version, strict_lints))


def gate_lints(version: Version, strict: bool) -> gate.LintCheck | None:
    """The version's lints as `--strict-lints` judges them (None without it): the warnings of
    its document left open, the findings accepted on it (or a version it was drawn from)
    aside."""
    if not strict:
        return None
    found = lint_reads.version_lints(version)
    return gate.LintCheck([str(w) for w in found.open], len(found.accepted))


def gate_measure(run: BatchRun, questions: dict[str, spec.Question]) -> gate.Measured:
    """What `questions.gate` judges, read from a finished run."""
    items = list(
        run.items.filter(variant=0).values_list(
            "sample_state__name", "sample_state__expected", "status", "error_status", "error_detail"
        )
    )
    unanswered = {
        name: ": ".join(str(part) for part in (status, detail) if part) or item_status
        for name, _, item_status, status, detail in items
        if item_status != BatchItem.Status.ANSWERED
    }
    measures = {qid: gate.QuestionMeasure(qid, q.type) for qid, q in questions.items()}
    cases = [c for c in runs.run_cases(run) if c.question in measures]
    answered = {(c.state, c.question) for c in cases}
    for name, expected, *_ in items:
        for qid, wanted in (expected or {}).items():
            q = measures.get(qid)
            if q is None or not metrics.expected_fits(q.qtype, wanted):
                continue
            q.labelled += 1
            if (name, qid) not in answered:
                q.unanswered.append(name)
    for q in measures.values():  # answered, but not every question it expects
        for name in q.unanswered:
            if name not in unanswered:
                unanswered[name] = f"answered without {q.question}"
            elif unanswered[name].startswith("answered without "):
                unanswered[name] += f", {q.question}"
    report = metrics.report(cases, threshold=run.threshold)
    for case in cases:
        if case.checked and not metrics.passes(
            case.qtype, case.answer, case.expected, run.threshold
        ):
            shown = metrics.shown(case.qtype, case.answer, run.threshold)
            wrong = metrics.wrong_confidence(case.qtype, case.answer, case.expected)
            measures[case.question].missed.append(
                gate.Miss(case.state, case.expected, shown, wrong)
            )
    for q in measures.values():  # the most confidently wrong first
        q.missed.sort(key=lambda x: (-(x.wrong if x.wrong is not None else -1.0), x.state))
    for qid, q in report.questions.items():
        if qid in measures:
            measures[qid].checked, measures[qid].passed = q.checked, q.passed
    flips, missing = _flips(run, questions, measures)
    cost, calls, price = _cost(run, [name for name, *_ in items])
    duration = 0.0
    if run.started_at and run.finished_at:
        duration = (run.finished_at - run.started_at).total_seconds()
    return gate.Measured(
        states=len(items),
        unanswered=unanswered,
        checked=report.checked,
        passed=report.passed,
        questions=measures,
        ece={
            "noul": (report.noul_calibration.ece, report.noul_calibration.count),
            "choice": (report.choice_calibration.ece, report.choice_calibration.count),
        },
        flips=flips,
        flips_missing=missing,
        cost_per_call=cost,
        cost_calls=calls,
        price_per_million=price,
        duration_s=duration,
        ambiguous=ambiguous_counts(run.question_set, run=run),
    )


def _flips(
    run: BatchRun, questions: dict[str, spec.Question], measures: dict[str, gate.QuestionMeasure]
) -> tuple[tuple[int, int] | None, str]:
    """(states flipped, states compared) against the version's evidence run, each question's
    flipped states noted in `measures`; or None and why there is nothing to compare."""
    base = run.version.approved_evidence_run
    if base is None:
        return None, (
            f"version {run.version.number} was approved with no evidence run: there are no "
            "answers to compare with"
        )
    types = {qid: q.type for qid, q in questions.items()}
    before, after = runs.run_readings(base, types), runs.run_readings(run, types)
    compared = set(before) & set(after)
    delta = deltas.compare_readings(
        before, after, types, run.threshold, threshold_before=base.threshold
    )
    flipped: set[str] = set()
    for change in delta.changes:
        flipped.add(change.state)
        measures[change.question].flipped.append(change.state)
    if not compared:
        return None, f"no labelled state was answered both here and in run {base.pk}"
    return (len(flipped), len(compared)), ""


def _cost(run: BatchRun, states: list[str]) -> tuple[float | None, int, float | None]:
    """(the mean cost of a call, the calls it is the mean of, the price per million input
    tokens) of the calls that answered the run's states."""
    wire = _wire_backend(run.backend).wire()
    price = wire.price_per_million
    if not isinstance(backends.get(run.backend), RecordedBackend):
        usages = list(
            run.items.exclude(decision=None)
            .filter(status=BatchItem.Status.ANSWERED)
            .values_list("decision__usage", flat=True)
        )
    else:
        usages = _replayed_usages(run, wire.name)
    costs = [c for c in (answers.cost_of(u, price) for u in usages) if c is not None]
    if not costs:
        return None, 0, price
    return sum(costs) / len(costs), len(costs), price


def _replayed_usages(run: BatchRun, wire: str) -> list[Any]:
    """The usage of the newest answered call of the run's questions about each of its states
    through `wire`: what the replayed answers cost when they were asked."""
    shas = set(run.items.values_list("sample_state__state_sha256", flat=True))
    newest: dict[str, Any] = {}
    rows = (
        Decision.objects.filter(
            backend=wire,
            status=200,
            questions_sha256=run.version.sha256,
            state_sha256__in=shas,
        )
        .order_by("-id")
        .values_list("state_sha256", "usage")
    )
    for sha, usage in rows:
        newest.setdefault(sha, usage)
    return list(newest.values())
