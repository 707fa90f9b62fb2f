"""Proofs: a candidate wording asked beside the version it would replace about the set's
held-out labelled states, and judged on the pairs (`questions.core.proof`); and the set setting
that says how many states are held out (`questions.core.holdout`).

Every rule of a proof is here, for the command line and any page alike:

- **evidence** — only held-out states are asked, only those that expect an answer of a changed
  question, and only the changed questions (an unchanged one answers the same either way). Both
  wordings go through the same backend and model, state by state, so each state is a pair. Each
  call is asked like the editor's preview (`decision_ask`: no version is stored for the
  candidate) and recorded with the version and the state's revision, so a proof can be replayed
  from its recordings (`--backend recorded`) without a call;
- **limits** — the plan says its calls (and their cost where the backend's recent calls price
  them) before anything is asked, and a proof above `max_calls` is refused;
- **who** — a live backend is for authors and reviewers; the held-out share is a reviewer's:
  the author whose wording is proven does not choose the states it is judged on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from questions import roles
from questions.core import check, controls, holdout, proof, spec
from questions.core.stats import plural
from questions.engine import backends
from questions.models import QuestionSet, Version
from questions.selectors.holdout import Judged, held_out_labelled, holdout_split
from questions.services import budget
from questions.services.audit import audit_record
from questions.services.batches import DEFAULT_THRESHOLD
from questions.services.budget import budget_hold
from questions.services.decisions import decision_ask, decision_backend
from questions.services.errors import Invalid, require
from questions.services.tries import cost_per_question
from questions.services.versions import InvalidContent, limits

log = logging.getLogger("questions.proofs")

SHARE_REVIEWERS_ONLY = "Only reviewers say how many of a set's states are held out."
#: a proof asks at most this many calls unless told otherwise
DEFAULT_MAX_CALLS = 400
#: the candidate's shuffles a proof asks for its floor, unless told otherwise
DEFAULT_SHUFFLES = 1
#: the shuffles are seeded: the same proof shuffles the same way
SHUFFLE_SEED = 0


def holdout_configure(*, question_set: QuestionSet, user: Any, share: Any) -> QuestionSet:
    """Set the share of `question_set`'s states held out for proofs (whole percent). Each
    state's side follows from its id (`holdout.held_out`): raising the share only moves states
    from training into the held-out side."""
    require(user, roles.may_review, SHARE_REVIEWERS_ONLY, on=question_set)
    refusal = holdout.share_refusal(share)
    if refusal:
        raise Invalid(refusal, code="holdout_share")
    if share != question_set.holdout_share:
        before = question_set.holdout_share
        question_set.holdout_share = share
        question_set.save(update_fields=["holdout_share", "updated_at"])
        audit_record(
            action="set.settings_changed",
            actor=user,
            obj=question_set,
            question_set=question_set,
            detail={"holdout_share": {"from": before, "to": share}},
        )
    return question_set


@dataclass
class ProofPlan:
    """What a proof would ask, before it asks."""

    version: Version
    before: dict[str, spec.Question]  # the version's questions
    after: dict[str, spec.Question]  # the candidate's
    changes: proof.Changes
    states: list[Judged]
    split: holdout.Split
    backend: str
    model: str
    live: bool
    shuffles: int
    threshold: float = DEFAULT_THRESHOLD
    cost_per_question: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def shuffled(self) -> list[str]:
        """The changed questions a shuffle changes: the choices."""
        return [q for q in self.changes.changed if self.after[q].type == "choice"]

    @property
    def calls_per_state(self) -> int:
        """The version's words, the candidate's, and each shuffle of the candidate's choices."""
        return 2 + (self.shuffles if self.shuffled else 0)

    @property
    def calls(self) -> int:
        return len(self.states) * self.calls_per_state

    @property
    def estimated_cost(self) -> float | None:
        if not self.live:
            return 0.0
        if self.cost_per_question is None:
            return None
        return self.cost_per_question * self.question_asks

    @property
    def question_asks(self) -> int:
        """The questions the calls carry: every changed one in both wordings, and the
        choices in each shuffle."""
        per_state = 2 * len(self.changes.changed) + self.shuffles * len(self.shuffled)
        return len(self.states) * per_state

    def words(self) -> str:
        """The plan in one line: the states, the calls, the cost."""
        cost, priced = self.estimated_cost, ""
        if self.live:
            priced = (
                " (cost unknown: no recent call was priced)"
                if cost is None
                else f" (estimated cost ${cost:.6f})"
            )
        per = f"the version's words, the candidate's, {plural(self.shuffles, 'shuffle')}"
        if not self.shuffled:
            per = "the version's words and the candidate's"
        return (
            f"{plural(len(self.states), 'held-out labelled state')} × "
            f"{self.calls_per_state} ({per}) = {plural(self.calls, 'call')} through "
            f"{self.backend} ({self.model}){priced}"
        )


def _parsed(document: Any) -> dict[str, spec.Question] | None:
    result = check.validate(document, limits=limits(), lints=False)
    return result.document.questions if result.document else None


def proof_plan(
    *,
    version: Version,
    candidate: Any,
    backend: str,
    user: Any,
    model: str | None = None,
    shuffles: int = DEFAULT_SHUFFLES,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> ProofPlan:
    """What proving `candidate` (a question-set document, any form) against `version` would
    ask. `Invalid` when the candidate is invalid, changes no question of the version, or would
    take more than `max_calls` calls; `NotAllowed` when `user` may not ask `backend` live."""
    if not 0 <= shuffles <= controls.MAX_VARIANTS:
        raise Invalid(f"A proof asks 0 to {controls.MAX_VARIANTS} shuffles, not {shuffles}.")
    if max_calls < 1:
        raise Invalid(f"A proof's call limit is at least 1, not {max_calls}.")
    chosen = decision_backend(backend=backend, user=user, model=model, on=version.question_set)
    if isinstance(chosen, backends.Outcome):
        raise Invalid(chosen.error.detail, code="unknown_backend")
    chosen, model = chosen
    result = check.validate(candidate, limits=limits(), lints=False)
    if result.document is None:
        raise InvalidContent("candidate", result.errors)
    after = result.document.questions
    before = _parsed(version.document)
    if before is None:
        raise Invalid(f"Version {version.number} is invalid: fix it before proving against it.")
    changes = proof.changes(before, after)
    if not changes.changed:
        raise Invalid(
            f"The candidate rewords no question of v{version.number}: nothing to prove."
            + (
                f" (It adds {', '.join(changes.added)}; a new question has no before.)"
                if changes.added
                else ""
            ),
            code="nothing_changed",
        )
    question_set = version.question_set
    changed = {q: after[q] for q in changes.changed}
    plan = ProofPlan(
        version=version,
        before=before,
        after=after,
        changes=changes,
        states=held_out_labelled(question_set, changed),
        split=holdout_split(question_set),
        backend=backend,
        model=model,
        live=chosen.live,
        shuffles=shuffles,
    )
    if plan.calls > max_calls:
        raise Invalid(
            f"The proof would ask {plan.words()}: more than the limit of {max_calls} calls. "
            "Raise the limit, or ask fewer shuffles.",
            code="too_many_calls",
        )
    if chosen.live and plan.calls:
        plan.cost_per_question = cost_per_question(backend)
    if changes.added:
        plan.notes.append(f"not judged: {', '.join(changes.added)} (new: no before to compare)")
    if changes.removed:
        plan.notes.append(f"not judged: {', '.join(changes.removed)} (the candidate drops them)")
    return plan


#: told after each call a proof asks, with whether it was answered (a suggestion's progress)
OnCall = Callable[[bool], None]


def _ask(plan: ProofPlan, judged: Judged, questions: dict, user: Any) -> tuple[Any, str]:
    """One call of a proof: the answers (None when it failed) and why it failed ("")."""
    outcome = decision_ask(
        backend=plan.backend,
        questions=questions,
        state=judged.state.state,
        user=user,
        model=plan.model,
        version=plan.version,
        sample_state=judged.revision,
        logged=False,  # one line for the proof
        budgeted=True,  # held by proof_before or proof_run
    )
    if outcome.error is not None:
        return None, f"{outcome.error.status}: {outcome.error.detail}"
    if outcome.checked is None:
        return None, "no answer"
    return outcome.checked.answers, ""


def proof_before(
    *, plan: ProofPlan, user: Any, on_call: OnCall | None = None, held: bool = False
) -> dict[str, Any]:
    """The version's answers to the changed questions about each held-out state of `plan`, by
    state name (None where the call failed): what proofs of several candidates of the same
    questions share (`proof_run`'s `before`), asked once."""
    wording = {q: plan.before[q] for q in plan.changes.changed}
    found = {}
    with _held(plan, 0 if held else len(plan.states)) as hold:
        for judged in plan.states:
            found[judged.state.name], _ = _ask(plan, judged, wording, user)
            hold.spent()
            if on_call:
                on_call(found[judged.state.name] is not None)
    return found


def _held(plan: ProofPlan, calls: int) -> Any:
    """The team's budget held for `calls` of the plan's (none when it replays)."""
    counted = plan.live and budget.calls_through(plan.backend)
    return budget_hold(
        team=plan.version.question_set, calls=calls if counted else 0, what="This proof"
    )


def proof_run(
    *,
    plan: ProofPlan,
    user: Any,
    before: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
    held: bool = False,
) -> proof.Proof:
    """Ask what `plan` says, state by state, and judge the pairs. A call that fails leaves its
    state out of the pairs (counted, with the first reason in the proof's notes). `before`: the
    version's answers by state name, asked already (`proof_before`), which are not asked
    again; `on_call` is told after each call. Refused (`budget.OverBudget`) before anything is
    asked when its calls would pass the team's daily budget, unless they are `held` already (a
    suggestion's, from its start)."""
    changed = plan.changes.changed
    choices = {q: plan.after[q] for q in plan.shuffled}
    wordings = [
        {q: plan.before[q] for q in changed},
        {q: plan.after[q] for q in changed},
        *(
            controls.variant_questions(choices, controls.SHUFFLE, SHUFFLE_SEED, k)
            for k in range(1, plan.shuffles + 1)
            if choices
        ),
    ]
    given = sum(1 for j in plan.states if before is not None and j.state.name in before)
    asked, made, failed, reasons = [], 0, 0, []
    with _held(plan, 0 if held else plan.calls - given) as hold:
        for judged in plan.states:
            answers = []
            for index, questions in enumerate(wordings):
                if index == 0 and before is not None and judged.state.name in before:
                    answers.append(before[judged.state.name])
                    continue
                made += 1
                answered, reason = _ask(plan, judged, questions, user)
                hold.spent()
                if answered is None:
                    failed += 1
                    if reason and not reasons:
                        reasons.append(reason)
                answers.append(answered)
                if on_call:
                    on_call(answered is not None)
            expected = judged.state.expected or {}  # the settled answers
            asked.append(
                proof.Asked(judged.state.name, expected, answers[0], answers[1], answers[2:])
            )
    found = proof.Proof(
        questions=proof.judge(changed, plan.before, plan.after, asked, plan.threshold),
        changes=plan.changes,
        states=len(plan.states),
        calls=made,
        failed_calls=failed,
        notes=list(plan.notes),
    )
    log.info(
        "proof set=%s version=%s backend=%s states=%s calls=%s failed=%s verdict=%s",
        plan.version.question_set.slug,
        plan.version.number,
        plan.backend,
        len(plan.states),
        made,
        failed,
        found.verdict,
    )
    if failed:
        found.notes.append(
            f"{plural(failed, 'call')} of {made} failed; their states are left out "
            f"of the pairs (first: {reasons[0] if reasons else 'no answer'})"
        )
    return found
