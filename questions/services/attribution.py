"""Attribution runs: which words decide an answer. A batch run of its own kind over one sample
state, asked live through the batch engine (`questions.services.batches`) like any run — the
same wires, recordings, retries, bounded concurrency, cancel and progress — with one variant
per call of the plan (`questions.attribution`: as written, the unchanged repeats, then one part
left out each). The plan is stored on the run, so its report is read from the record: opening
it again costs nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from questions import roles
from questions.core import attribution, check, spec
from questions.models import BatchItem, BatchRun, SampleState, Version
from questions.services import tries
from questions.services.batches import (
    DEFAULT_CONCURRENCY,
    RUNNERS_ONLY,
    _runnable,
    batch_create,
)
from questions.services.errors import Invalid, NotFound, model_name, require, storable
from questions.services.versions import InvalidContent, limits


@dataclass
class AttributionPlan:
    """What attributing asks, said before it is asked: the calls and their estimated cost."""

    version: Version
    sample: SampleState
    backend: str
    model: str
    live: bool
    plan: attribution.Plan
    cost_per_question: float | None = None

    @property
    def calls(self) -> int:
        return self.plan.calls

    @property
    def estimated_cost(self) -> float | None:
        """The backend's recent mean cost of one question × the questions the calls carry;
        None when no recorded call of the backend says what a question costs."""
        if not self.live:
            return 0.0
        if self.cost_per_question is None:
            return None
        return self.cost_per_question * self.plan.question_asks

    def as_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "estimated_cost": self.estimated_cost,
            "questions": self.plan.questions,
            "repeats": self.plan.repeats,
            "parts": [p.path for p in self.plan.parts],
            "skipped": [{"path": s.part.path, "reason": s.reason} for s in self.plan.skipped],
        }


def _questions(version: Version) -> dict[str, spec.Question]:
    result = check.validate(version.document, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("version", result.errors)
    return result.document.questions


def attribution_plan(
    *,
    version: Version,
    state: str,
    backend: str,
    user: Any,
    question: str | None = None,
    repeats: int = attribution.DEFAULT_REPEATS,
) -> AttributionPlan:
    """What attributing `question` (None: every question) of `version` on the sample state
    named `state` asks through `backend`. `NotFound` names a state or question the set does not
    have; `Invalid` a replaying backend (it answers only what was asked before)."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    chosen = _runnable(backend)
    if not chosen.live:
        raise Invalid(
            f"Attribution asks live: {backend} replays recordings; choose a live backend.",
            code="not_live",
        )
    if not state:
        raise Invalid("Pick the sample state to attribute on.", code="no_state")
    question_set = version.question_set
    sample = question_set.sample_states.filter(name=storable(state, "The state's name")).first()
    if sample is None:
        names = ", ".join(question_set.sample_states.values_list("name", flat=True)[:10])
        raise NotFound(
            f"{question_set.slug} has no sample state named {spec.shown_id(state)!r}"
            + (f"; its states: {names}." if names else "; it has no sample states.")
        )
    questions = _questions(version)
    try:
        planned = attribution.plan(
            questions, sample.state, question=question, repeats=repeats, limits=limits()
        )
    except KeyError:
        raise NotFound(
            f"v{version.number} of {question_set.slug} has no question "
            f"{spec.shown_id(question or '')!r}; its questions: "
            f"{', '.join(spec.shown_id(q) for q in questions)}."
        ) from None
    except ValueError as exc:
        raise Invalid(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None
    return AttributionPlan(
        version=version,
        sample=sample,
        backend=backend,
        model=model_name(chosen.default_model()),
        live=chosen.live,
        plan=planned,
        cost_per_question=tries.cost_per_question(backend),
    )


def attribution_start(
    *,
    plan: AttributionPlan,
    user: Any,
    concurrency: int = DEFAULT_CONCURRENCY,
    enqueue: bool = True,
) -> BatchRun:
    """Start the planned attribution: a batch run over the state's current revision, one item
    per call of the plan."""
    return batch_create(
        version=plan.version,
        backend=plan.backend,
        user=user,
        concurrency=concurrency,
        model=plan.model,
        enqueue=enqueue,
        variants=plan.plan.variants,
        sample_states=[plan.sample],
        kind=attribution.KIND,
        control_count=plan.plan.repeats,
        attribution=plan.plan.as_json(),
    )


def attribution_report(run: BatchRun) -> list[attribution.Report]:
    """An attribution run's findings per question, read from its record (no call)."""
    if run.kind != attribution.KIND or run.attribution is None:
        raise Invalid(f"Run {run.pk} is a {run.kind} run, not an attribution.")
    plan = attribution.Plan.from_json(run.attribution)
    answered = run.items.filter(status=BatchItem.Status.ANSWERED).values_list("variant", "answers")
    return attribution.report(plan, dict(answered))
