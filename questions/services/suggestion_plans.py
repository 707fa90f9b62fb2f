"""A suggestion's plan (`questions.services.suggestions`): what it would ask, said before it
asks — the failing training states of the run it drafts from, the first `ATTRIBUTED` of them
attributed, the held-out states its candidates are proven on, the calls and their cost — and
the refusals that stop it before anything is asked (nothing failed on the training side,
nothing held out to prove on, a backend that is not live, a plan above its call limit)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from questions import roles
from questions.core import attribution, check, controls, holdout, metrics, rewording, spec
from questions.core.stats import plural
from questions.engine.backends import drafting
from questions.models import BatchItem, BatchRun, Version
from questions.selectors import runs
from questions.selectors.holdout import Judged, held_out_labelled, holdout_split
from questions.services import proofs
from questions.services.batches import RUNNERS_ONLY, _runnable
from questions.services.errors import (
    Invalid,
    NotConfigured,
    NotFound,
    model_name,
    require,
)
from questions.services.tries import cost_per_question
from questions.services.versions import (
    InvalidContent,
    limits,
)

#: a suggestion asks at most this many calls unless told otherwise (a proof's limit)
DEFAULT_MAX_CALLS = proofs.DEFAULT_MAX_CALLS
#: failing training states attributed at most (the others are sent without evidence), and
#: the unchanged repeats each attribution asks for its noise floor
ATTRIBUTED = 4
ATTRIBUTION_REPEATS = 1
#: failing states and passing ones (to keep right) a drafting request carries at most, and the
#: bytes of state they may hold together
FAILING_SENT = 12
PASSING_SENT = 6
STATE_BUDGET = 64 * 1024


@dataclass
class Trained:
    """A training state a run answered: the revision it asked, what it expected and got."""

    name: str
    revision: Any  # SampleStateRevision
    expected: Any
    answer: dict[str, Any]

    def failing(self, qid: str, qtype: str) -> rewording.Failing:
        answered = rewording.answer_value(qtype, self.answer)
        return rewording.Failing(self.name, self.revision.state, self.expected, answered)


@dataclass
class SuggestPlan:
    """What a suggestion would ask, said before it asks."""

    version: Version
    questions: dict[str, spec.Question]
    qid: str
    run: BatchRun
    backend: str
    model: str
    draft_model: str
    candidates: int
    shuffles: int
    failing: list[Trained]
    passing: list[Trained]
    attributions: list[tuple[Trained, attribution.Plan]]
    held_out: list[Judged]
    split: holdout.Split
    cost_per_question: float | None = None
    draft_tokens: int = 0
    draft_price: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def question(self) -> spec.Question:
        return self.questions[self.qid]

    @property
    def attribution_calls(self) -> int:
        return sum(p.calls for _, p in self.attributions)

    @property
    def per_candidate(self) -> int:
        """Calls per held-out state for each candidate: its words, and each shuffle of a
        choice's."""
        return 1 + (self.shuffles if self.question.type == "choice" else 0)

    @property
    def proof_calls(self) -> int:
        """The version's words once per held-out state, then each candidate's."""
        return len(self.held_out) * (1 + self.candidates * self.per_candidate)

    @property
    def calls(self) -> int:
        return self.attribution_calls + 1 + self.proof_calls

    @property
    def question_asks(self) -> int:
        """Questions the attributing and proving calls carry: one each."""
        return self.attribution_calls + self.proof_calls

    @property
    def backend_cost(self) -> float | None:
        """The attributing and proving calls' cost: the backend's recent cost of a question
        times the questions they carry; None when no recent call of it was priced."""
        if self.cost_per_question is None:
            return None
        return self.cost_per_question * self.question_asks

    @property
    def draft_cost(self) -> float | None:
        """The drafting call's cost: its input tokens (about) at the `llm` wire's price; None
        when the wire has no price (LLM_PRICE_PER_MILLION_INPUT_TOKENS)."""
        if self.draft_price is None:
            return None
        return self.draft_price * self.draft_tokens / 1_000_000

    @property
    def estimated_cost(self) -> float | None:
        """Both together; None when either is unknown."""
        if self.backend_cost is None or self.draft_cost is None:
            return None
        return self.backend_cost + self.draft_cost

    def cost_words(self) -> str:
        """ "estimated cost $0.000120 ($0.000100 through typesafe, $0.000020 drafting)", or
        which part is unknown and why."""
        backend, draft = self.backend_cost, self.draft_cost
        through = (
            f"${backend:.6f} through {self.backend}"
            if backend is not None
            else f"the {self.backend} calls' cost unknown (no recent call of it was priced)"
        )
        drafted = (
            f"${draft:.6f} drafting"
            if draft is not None
            else "the drafting call's cost unknown (the llm wire has no price: "
            "LLM_PRICE_PER_MILLION_INPUT_TOKENS)"
        )
        total = self.estimated_cost
        if total is None:
            return f"{through}; {drafted}"
        return f"estimated cost ${total:.6f} ({through}, {drafted})"

    def words(self) -> str:
        """The plan in one line: the states, the calls, the cost."""
        failing = plural(len(self.failing), "failing training state")
        return (
            f"`{self.qid}` of v{self.version.number}: {failing}"
            f" of run {self.run.pk}; {self.attribution_calls} attribution calls about "
            f"{plural(len(self.attributions), 'state')} + 1 drafting call to llm "
            f"({self.draft_model}) for {plural(self.candidates, 'candidate')} + "
            f"{self.proof_calls} proof calls on {plural(len(self.held_out), 'held-out state')}"
            f" through {self.backend} ({self.model}) = {plural(self.calls, 'call')}; "
            f"{self.cost_words()}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.run.pk,
            "question": self.qid,
            "before": self.question.to_json(),
            "failing": [t.name for t in self.failing],
            "attributed": [t.name for t, _ in self.attributions],
            "held_out": len(self.held_out),
            "holdout": self.split.as_json(),
            "candidates": self.candidates,
            "shuffles": self.shuffles,
            "attribution_calls": self.attribution_calls,
            "draft_calls": 1,
            "proof_calls": self.proof_calls,
            "calls": self.calls,
            "estimated_cost": self.estimated_cost,
            "backend_cost": self.backend_cost,
            "draft_cost": self.draft_cost,
            "words": self.words(),
            "notes": self.notes,
        }


def _questions(version: Version) -> dict[str, spec.Question]:
    result = check.validate(version.document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("version", result.errors)
    return result.document.questions


def training_answers(run: BatchRun, qid: str, qtype: str) -> tuple[list[Trained], list[Trained]]:
    """The training states `run` answered that expect an answer of `qid`: those it answered
    wrong and those it answered right, each by name (a held-out state is never among them)."""
    question_set = run.question_set
    items = (
        run.items.filter(variant=0, status=BatchItem.Status.ANSWERED)
        .select_related("sample_state")
        .order_by("sample_state__name", "pk")
    )
    failing, passing = [], []
    for item in items:
        revision = item.sample_state
        if holdout.held_out(question_set.pk, revision.sample_state_id, question_set.holdout_share):
            continue
        expected = (revision.expected or {}).get(qid)
        answer = (item.answers or {}).get(qid)
        if answer is None or not metrics.expected_fits(qtype, expected):
            continue
        trained = Trained(revision.name, revision, expected, answer)
        passed = metrics.passes(qtype, answer, expected, run.threshold)
        (passing if passed else failing).append(trained)
    return failing, passing


def _attribution(questions: dict, qid: str, trained: Trained) -> attribution.Plan | None:
    """What attributing `qid` on a failing state asks: the question's parts only (which of
    its words moved the answer), each left out once. None when it cannot be planned."""
    try:
        planned = attribution.plan(
            questions,
            trained.revision.state,
            question=qid,
            repeats=ATTRIBUTION_REPEATS,
            limits=limits(),
        )
    except (KeyError, ValueError):
        return None
    own = [p for p in planned.parts if p.question is not None]
    skipped = [s for s in planned.skipped if s.part.question is not None]
    return dataclasses.replace(planned, parts=own, skipped=skipped)


def _source_run(version: Version, run: BatchRun | None) -> BatchRun:
    found = run or runs.latest_run(version)
    if found is None:
        raise Invalid(
            f"v{version.number} has no finished run: run it over the sample states first; a "
            "suggestion is drafted from the states it answered wrong.",
            code="no_run",
        )
    return found


def suggestion_plan(
    *,
    version: Version,
    question: str,
    user: Any,
    backend: str = "",
    candidates: int = rewording.DEFAULT_CANDIDATES,
    shuffles: int = proofs.DEFAULT_SHUFFLES,
    max_calls: int = DEFAULT_MAX_CALLS,
    run: BatchRun | None = None,
) -> SuggestPlan:
    """What suggesting rewordings of `question` of `version` would ask: drafted from the
    failing training states of `run` (default: the version's last finished run), attributed
    and proven through `backend` (default: the run's). `NotFound` for a question the version
    does not have; `Invalid` when nothing failed on the training side, no held-out state could
    prove a candidate, the backend is not live, or the plan is above `max_calls`;
    `NotConfigured` (503) when the `llm` wire or the backend is not configured."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    if not 1 <= candidates <= rewording.MAX_CANDIDATES:
        raise Invalid(f"A suggestion drafts 1 to {rewording.MAX_CANDIDATES} candidates.")
    if not 0 <= shuffles <= controls.MAX_VARIANTS:
        raise Invalid(f"A proof asks 0 to {controls.MAX_VARIANTS} shuffles, not {shuffles}.")
    if max_calls < 1:
        raise Invalid(f"A suggestion's call limit is at least 1, not {max_calls}.")
    questions = _questions(version)
    if question not in questions:
        raise NotFound(
            f"v{version.number} of {version.question_set.slug} has no question "
            f"{spec.shown_id(question)!r}; its questions: "
            f"{', '.join(spec.shown_id(q) for q in questions)}."
        )
    source = _source_run(version, run)
    backend = backend or source.backend.removeprefix("recorded:")
    if backend == "recorded":
        backend = "typesafe"
    chosen = _runnable(backend)
    if not chosen.live:
        raise Invalid(
            f"A suggestion attributes and proves live: {backend} replays recordings; choose "
            "a live backend.",
            code="not_live",
        )
    missing = drafting.configured()
    if missing:
        raise NotConfigured(f"Suggestions are drafted through the llm backend. {missing}")
    target = questions[question]
    failing, passing = training_answers(source, question, target.type)
    if not failing:
        raise Invalid(
            f"Run {source.pk} answered every training state of `{question}` as expected: "
            "nothing to draft from.",
            code="nothing_failing",
        )
    held_out = held_out_labelled(version.question_set, {question: target})
    if not held_out:
        raise Invalid(
            f"No held-out state expects an answer of `{question}`: nothing could prove a "
            "candidate. Label held-out states (or raise the set's held-out share) first.",
            code="nothing_to_prove",
        )
    attributions = [
        (t, planned)
        for t in failing[:ATTRIBUTED]
        if (planned := _attribution(questions, question, t)) is not None
    ]
    draft_model = model_name(drafting.default_model())
    sent_failing, sent_passing = sent(failing, passing, question, target.type)
    plan = SuggestPlan(
        version=version,
        questions=questions,
        qid=question,
        run=source,
        backend=backend,
        model=model_name(chosen.default_model()),
        draft_model=draft_model,
        candidates=candidates,
        shuffles=shuffles,
        failing=failing,
        passing=passing,
        attributions=attributions,
        held_out=held_out,
        split=holdout_split(version.question_set),
        cost_per_question=cost_per_question(backend),
        draft_tokens=drafting.estimated_tokens(
            drafting.request_body(target, sent_failing, sent_passing, candidates, draft_model)
        ),
        draft_price=drafting.price_per_million(),
    )
    if plan.calls > max_calls:
        raise Invalid(
            f"The suggestion would ask {plan.words()}: more than the limit of {max_calls} "
            "calls. Raise the limit, or ask fewer candidates or shuffles.",
            code="too_many_calls",
        )
    if len(failing) > len(sent_failing):
        plan.notes.append(
            f"{len(sent_failing)} of the {len(failing)} failing states go to the drafter "
            f"(at most {FAILING_SENT}, within {STATE_BUDGET // 1024} KiB of state)"
        )
    if len(held_out) < proofs.proof.FEW_STATES:
        plan.notes.append(
            f"only {plural(len(held_out), 'held-out state')} to prove on, fewer than "
            f"{proofs.proof.FEW_STATES}: a real difference can stay unproven"
        )
    return plan


def sent(
    failing: list[Trained], passing: list[Trained], qid: str, qtype: str
) -> tuple[list[rewording.Failing], list[dict[str, Any]]]:
    """The failing states a drafting request carries (at most `FAILING_SENT`) and the passing
    ones (at most `PASSING_SENT`), within `STATE_BUDGET` bytes of state together."""
    budget = STATE_BUDGET
    out_failing, out_passing = [], []
    for t in failing[:FAILING_SENT]:
        size = len(spec.wire_json(t.revision.state))
        if size <= budget:
            budget -= size
            out_failing.append(t.failing(qid, qtype))
    for t in passing[:PASSING_SENT]:
        size = len(spec.wire_json(t.revision.state))
        if size <= budget:
            budget -= size
            out_passing.append({"state": t.revision.state, "expected": t.expected})
    return out_failing, out_passing
