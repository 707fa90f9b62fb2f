"""Try across states: ask only the questions an edit changed about every sample state, replay
the others from recordings, and read the answers before → after.

Questions are independent (one answer is never context for another), so an edit to one
question needs that question asked again and nothing else. A try is a batch run like any
other (`batch_create` with `live_questions`): it appears on the run list and in compare. Its
baseline — the last finished run of the set on the same backend, or the latest run of a chosen
version — gives the "before" answers, and the question contents it is compared with (a run
keeps the sha256 of every question it asked, so a draft that changed since is still told
apart; an older run falls back to its version's document).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from questions import roles
from questions.core import check, gate, metrics, stats
from questions.core.numbers import whole_number
from questions.engine import backends
from questions.models import BatchItem, BatchRun, Decision, SampleState, Version
from questions.services.batches import RUNNERS_ONLY, _runnable, batch_create
from questions.services.errors import Invalid, model_name, require
from questions.services.versions import InvalidContent, limits

#: how many recent calls of a backend its cost estimate reads
COST_SAMPLE = 50


@dataclass
class Plan:
    """What a try would ask, before it asks: the changed questions, the states, the calls."""

    backend: str
    model: str
    live: bool
    baseline_run: BatchRun | None
    baseline_version: Version | None
    changed: list[str]
    unchanged: list[str]
    states: list[SampleState]
    tag: str = ""
    cost_per_question: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.changed) + len(self.unchanged)

    @property
    def calls(self) -> int:
        """One request per state, carrying the changed questions only."""
        return len(self.states) if self.changed else 0

    @property
    def live_calls(self) -> int:
        return self.calls if self.live else 0

    @property
    def estimated_cost(self) -> float | None:
        if not self.live:
            return 0.0
        if self.cost_per_question is None:
            return None
        return self.cost_per_question * len(self.changed) * len(self.states)

    @property
    def baseline_label(self) -> str:
        if self.baseline_run is not None:
            return f"run {self.baseline_run.pk} (v{self.baseline_run.version.number})"
        if self.baseline_version is not None:
            return f"v{self.baseline_version.number}"
        return "nothing (no earlier run)"


def _hashes_of(run: BatchRun) -> dict[str, str]:
    """The question contents a run asked: its own record, or (an older run) its version's."""
    if run.question_hashes:
        return dict(run.question_hashes)
    parsed = check.validate(run.version.document, limits=limits(), lints=False).document
    return {qid: q.sha256 for qid, q in parsed.questions.items()} if parsed else {}


def _version_hashes(version: Version) -> dict[str, str]:
    parsed = check.validate(version.document, limits=limits(), lints=False).document
    return {qid: q.sha256 for qid, q in parsed.questions.items()} if parsed else {}


def try_plan(
    *, version: Version, document: Any, backend: str, user: Any, against: str = "", tag: str = ""
) -> Plan:
    """What trying `document` (the editor's questions, saved or not) across the sample states
    would ask. `against` is "" (the last finished run on `backend`) or "v<N>" (a version).
    `Invalid` when the document is invalid or no state is there to try."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    chosen = _runnable(backend)
    result = check.validate(document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("draft", result.errors)
    questions = result.document.questions
    question_set = version.question_set
    runs = (
        BatchRun.objects.filter(
            question_set=question_set, status=BatchRun.Status.DONE, backend=backend
        )
        .exclude(kind=gate.KIND)  # a gate's run is no one's baseline
        .select_related("version")
    )
    baseline_run, baseline_version = None, None
    if against:
        number = whole_number(against.removeprefix("v"), digits=9)
        baseline_version = (
            None if number is None else question_set.versions.filter(number=number).first()
        )
        if baseline_version is None:
            raise Invalid(f"{question_set.slug} has no version {against[:20]!r} to compare with.")
        baseline_run = runs.filter(version=baseline_version).order_by("-id").first()
        before = _version_hashes(baseline_version)
    else:
        baseline_run = runs.order_by("-id").first()
        before = _hashes_of(baseline_run) if baseline_run else {}
    changed = [qid for qid, q in questions.items() if before.get(qid) != q.sha256]
    unchanged = [qid for qid in questions if qid not in changed]
    states = list(question_set.sample_states.all())
    if tag:
        states = [s for s in states if tag in s.tags]
    if not states:
        raise Invalid(
            f"{question_set.slug} has no sample states"
            + (f" tagged {tag}" if tag else "")
            + " to try."
        )
    plan = Plan(
        backend=backend,
        model=model_name(chosen.default_model()),
        live=chosen.live,
        baseline_run=baseline_run,
        baseline_version=baseline_version,
        changed=changed,
        unchanged=unchanged,
        states=states,
        tag=tag,
    )
    if chosen.live and changed:
        plan.cost_per_question = cost_per_question(backend)
    if baseline_version is not None and baseline_run is None:
        plan.notes.append(
            f"v{baseline_version.number} has no finished {backend} run: there is no 'before'."
        )
    return plan


def cost_per_question(backend: str) -> float | None:
    """The mean cost of one question in the backend's recent calls, or None when none says."""
    recent = (
        Decision.objects.filter(backend=backend, status=200, cost__isnull=False)
        .annotate(n=Count("answers"))
        .filter(n__gt=0)
        .order_by("-id")
        .values_list("cost", "n")[:COST_SAMPLE]
    )
    rows = list(recent)
    if not rows:
        return None
    return sum(cost for cost, _ in rows) / sum(n for _, n in rows)


def try_start(*, version: Version, plan: Plan, user: Any, enqueue: bool = True) -> BatchRun:
    """Start the planned try: a batch run of `version` that asks the changed questions only."""
    if not plan.changed:
        raise Invalid(
            f"Nothing changed since {plan.baseline_label}: every answer is already recorded."
        )
    return batch_create(
        version=version,
        backend=plan.backend,
        user=user,
        tag=plan.tag,
        live_questions=plan.changed,
        baseline=plan.baseline_run,
        enqueue=enqueue,
    )


def said(answer: dict | None) -> str:
    """An answer in a few characters: the option, the score, P(true)."""
    if answer is None:
        return "—"
    if answer.get("type") == "choice":
        return str(answer["choice"])
    if answer.get("type") == "score":
        return f"{float(answer['score']):.2f}"
    return f"P(true) {float(answer['noul']):.2f}"


@dataclass
class Cell:
    question: str
    qtype: str
    before: dict | None
    after: dict | None
    expected: Any
    threshold: float

    def _passes(self, answer: dict | None) -> bool | None:
        if answer is None or self.expected is None:
            return None
        if not metrics.expected_fits(self.qtype, self.expected):
            return None
        return metrics.passes(self.qtype, answer, self.expected, self.threshold)

    @property
    def passed_before(self) -> bool | None:
        return self._passes(self.before)

    @property
    def passed_after(self) -> bool | None:
        return self._passes(self.after)

    @property
    def before_text(self) -> str:
        return said(self.before)

    @property
    def after_text(self) -> str:
        return said(self.after)

    @property
    def flipped(self) -> bool:
        if self.before is None or self.after is None:
            return False
        return metrics.flipped(self.qtype, self.before, self.after, self.threshold)


@dataclass
class StateRow:
    name: str
    status: str
    detail: str
    cells: list[Cell]

    @property
    def flips(self) -> int:
        return sum(c.flipped for c in self.cells)

    @property
    def regressions(self) -> int:
        return sum(c.passed_before is True and c.passed_after is False for c in self.cells)


@dataclass
class TryResult:
    run: BatchRun
    changed: list[str]
    rows: list[StateRow]
    pass_before: float | None
    pass_after: float | None
    models: list[str]
    #: the pass rates with their 95 % intervals and n (`stats.rate_words`); "" when not known
    words_before: str = ""
    words_after: str = ""

    @property
    def flips(self) -> int:
        return sum(r.flips for r in self.rows)


def _answers_by_state(run: BatchRun) -> dict[int, dict[str, dict]]:
    """A run's answers by sample state (not revision): state id → question id → answer."""
    rows = run.items.filter(status=BatchItem.Status.ANSWERED).values_list(
        "sample_state__sample_state_id", "answers"
    )
    return {state: answers or {} for state, answers in rows}


def _rate(cases: list[metrics.Case], threshold: float) -> tuple[float | None, str]:
    """The pass rate of `cases`, and the same with its interval and n in words."""
    found = metrics.report(cases, threshold=threshold)
    return found.pass_rate, stats.rate_words(found.passed, found.checked)


def try_result(run: BatchRun) -> TryResult:
    """Per state the changed questions' answers before → after against the expected answer,
    states with flips (then regressions) first, and the pass rate of every question before →
    after over the run's states."""
    items = list(
        run.items.select_related("sample_state")
        .order_by("pk")
        .only(
            "status",
            "error_detail",
            "answers",
            "sample_state__sample_state_id",
            "sample_state__name",
            "sample_state__expected",
        )
    )
    before = _answers_by_state(run.baseline) if run.baseline else {}
    changed = list(run.live_questions or [])
    rows, cases_before, cases_after = [], [], []
    for item in items:
        revision = item.sample_state
        expected = revision.expected or {}
        after = item.answers or {}
        was = before.get(revision.sample_state_id, {})
        cells = []
        for qid in changed:
            answer = after.get(qid) or was.get(qid)
            qtype = (answer or {}).get("type", "")
            cells.append(
                Cell(qid, qtype, was.get(qid), after.get(qid), expected.get(qid), run.threshold)
            )
        rows.append(StateRow(revision.name, item.status, item.error_detail, cells))
        if item.status == BatchItem.Status.ANSWERED and was:
            for qid, answer in was.items():
                cases_before.append(
                    metrics.Case(
                        revision.name, qid, answer.get("type", ""), answer, expected.get(qid)
                    )
                )
        for qid, answer in after.items():
            cases_after.append(
                metrics.Case(revision.name, qid, answer.get("type", ""), answer, expected.get(qid))
            )
    rows.sort(key=lambda r: (-r.flips, -r.regressions, r.status != BatchItem.Status.FAILED))
    models = sorted(
        {
            m
            for m in run.items.exclude(decision=None).values_list(
                "decision__model_answered", flat=True
            )
            if m
        }
    )
    before_rate, before_words = _rate(cases_before, run.threshold) if run.baseline else (None, "")
    after_rate, after_words = _rate(cases_after, run.threshold) if run.finished else (None, "")
    return TryResult(
        run=run,
        changed=changed,
        rows=rows,
        pass_before=before_rate,
        pass_after=after_rate,
        models=models,
        words_before=before_words,
        words_after=after_words,
    )


def backend_label(backend: backends.Backend) -> str:
    """How a backend reads in a dropdown: a replay says so; typesafe says when it is the local
    stand-in; custom that it is your own function."""
    from django.conf import settings

    if not backend.live:
        return f"{backend.name} (replay, no call)"
    if backend.name == "typesafe" and settings.DECISIONS_STANDIN:
        return "typesafe (local stand-in)"
    if backend.name == "custom":
        return f"custom ({settings.DECISIONS_CUSTOM_BACKEND[:60]})"
    return backend.name
