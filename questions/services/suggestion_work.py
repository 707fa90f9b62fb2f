"""A suggestion's work (`questions.services.suggestions`), as a task worker or the command line
does it: plan again from its record (the cap it was started with holds), attribute the first
failing training states, draft the candidates through the `llm` wire, check each by the
contract and the lints, then prove each on the held-out states — the version's words asked once
(`proofs.proof_before`), each candidate's beside them (`proofs.proof_run`). Its record is
written as it goes — the stage, the calls done, each candidate as it is checked and proven —
so a page polling it shows the candidates as they come; a cancel stops it after the call it is
making, and what is proven stays."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone
from django_tasks import task

from questions import roles
from questions.core import attribution, check, rewording, spec
from questions.core.rewording import PENDING, PROVEN, REFUSED, SAME, UNCHANGED
from questions.core.stats import plural
from questions.engine.backends import drafting
from questions.models import Suggestion
from questions.selectors.sets import sample_state_paths
from questions.services import proofs
from questions.services.decisions import decision_ask
from questions.services.errors import Refusal
from questions.services.suggestion_plans import (
    SuggestPlan,
    Trained,
    sent,
    suggestion_plan,
)
from questions.services.versions import document_text, limits

log = logging.getLogger("questions.suggestions")


class _Stopped(Exception):
    """A cancel was asked for: stop after the call just made."""


class _Failed(Exception):
    """The suggestion cannot go on, for the reason given (shown on it)."""


class _Progress:
    """Counts the calls as they are made and says so on the record; stops on a cancel."""

    def __init__(self, suggestion: Suggestion, planned: int):
        self.pk, self.planned, self.done, self.failed = suggestion.pk, planned, 0, 0
        self._save(calls_planned=planned)

    def _save(self, **fields: Any) -> None:
        Suggestion.objects.filter(pk=self.pk).update(**fields)

    def stage(self, words: str, **fields: Any) -> None:
        self._save(stage=words[:200], **fields)
        self.check()

    def check(self) -> None:
        if Suggestion.objects.filter(pk=self.pk, cancel_requested=True).exists():
            raise _Stopped

    def call(self, answered: bool) -> None:
        self.done += 1
        self.failed += not answered
        self._save(calls_done=self.done, calls_failed=self.failed)
        self.check()

    def replan(self, left: int) -> None:
        """What is left to ask is now known (some candidates are not proven)."""
        self.planned = self.done + left
        self._save(calls_planned=self.planned)


@task()
def suggestion_task(suggestion_id: int) -> None:
    """Work a queued suggestion (`suggestion_execute`) in a task worker."""
    suggestion_execute(suggestion_id)


def suggestion_execute(suggestion_id: int) -> Suggestion:
    """Work a queued suggestion to its end: done, cancelled or failed (with why). A
    suggestion that is not queued (another worker has it, or it was cancelled) is left."""
    claimed = Suggestion.objects.filter(pk=suggestion_id, status=Suggestion.Status.QUEUED).update(
        status=Suggestion.Status.RUNNING, started_at=timezone.now(), stage="planning"
    )
    suggestion = Suggestion.objects.select_related("version__question_set", "run").get(
        pk=suggestion_id
    )
    if not claimed:
        return suggestion
    ending: dict[str, Any] = {"status": Suggestion.Status.DONE, "stage": "done"}
    try:
        _work(suggestion, suggestion.created_by or roles.OPERATOR)
    except _Stopped:
        ending = {"status": Suggestion.Status.CANCELLED, "stage": "cancelled"}
    except (_Failed, Refusal) as exc:
        ending = {"status": Suggestion.Status.FAILED, "stage": "failed", "detail": str(exc)}
    except Exception as exc:  # the record must end, or a page polls it for ever
        log.error("suggestion %s failed: %s", suggestion_id, type(exc).__name__)
        ending = {
            "status": Suggestion.Status.FAILED,
            "stage": "failed",
            "detail": f"The suggestion failed inside the console ({type(exc).__name__}); "
            "the server log says where.",
        }
    Suggestion.objects.filter(pk=suggestion_id).update(**ending, finished_at=timezone.now())
    suggestion.refresh_from_db()
    log.info(
        "suggestion %s of %s v%s %s: %s, %s calls, %s failed",
        suggestion.pk,
        suggestion.version.question_set.slug,
        suggestion.version.number,
        suggestion.question,
        suggestion.status,
        suggestion.calls_done,
        suggestion.calls_failed,
    )
    return suggestion


def _work(suggestion: Suggestion, user: Any) -> None:
    plan = suggestion_plan(
        version=suggestion.version,
        question=suggestion.question,
        user=user,
        backend=suggestion.backend,
        candidates=suggestion.candidates_wanted,
        shuffles=suggestion.shuffles,
        max_calls=suggestion.max_calls,
        run=suggestion.run,
    )
    if suggestion.version.sha256 != suggestion.version_sha256:
        raise _Failed(f"v{suggestion.version.number} changed before the suggestion started.")
    progress = _Progress(suggestion, plan.calls)
    evidence = _attribute(plan, user, progress)
    failing, passing = sent(plan.failing, plan.passing, plan.qid, plan.question.type)
    for f in failing:
        f.evidence = evidence.get(f.name, [])
    progress.stage(
        f"drafting {plural(plan.candidates, 'candidate')} through llm ({plan.draft_model})"
    )
    found = drafting.draft(plan.question, failing, passing, plan.candidates, plan.draft_model)
    progress.call(found.error is None)
    if found.error is not None:
        raise _Failed(f"Drafting failed ({found.error.status}): {found.error.detail}")
    candidates = _checked(plan, found.candidates)
    provable = [c for c in candidates if c["status"] == PENDING]
    progress.replan(
        len(plan.held_out) * (1 + len(provable) * plan.per_candidate) if provable else 0
    )
    progress.stage(
        f"checked {plural(len(candidates), 'candidate')}: {len(provable)} to prove",
        draft_model_answered=found.model,
        draft_usage=found.usage,
        draft_cost=found.cost,
        candidates_text=document_text(candidates),
    )
    _prove(plan, suggestion, candidates, provable, user, progress)
    ranked = sorted(
        candidates,
        key=lambda c: (
            c["status"] != PROVEN,
            rewording.rank_key(
                c.get("verdict"),
                (c.get("proof") or {}).get("difference_interval"),
                (c.get("proof") or {}).get("difference"),
            ),
            c["number"],
        ),
    )
    progress.stage("done", candidates_text=document_text(ranked))


def _attribute(
    plan: SuggestPlan, user: Any, progress: _Progress
) -> dict[str, list[rewording.Finding]]:
    """Which of the question's words moved each attributed failing state's answer: the
    decisive parts of the question (a state's own parts are not asked)."""
    out: dict[str, list[rewording.Finding]] = {}
    shown = []
    for i, (trained, planned) in enumerate(plan.attributions, 1):
        progress.stage(
            f"attributing `{plan.qid}` on '{trained.name}' ({i} of {len(plan.attributions)})"
        )
        answers = {
            v: _asked(plan, trained, planned, v, user, progress) for v in range(planned.calls)
        }
        (report,) = attribution.report(planned, answers)
        out[trained.name] = [
            rewording.Finding(f.part.path, f.part.text, f.delta) for f in report.decisive
        ]
        failing = trained.failing(plan.qid, plan.question.type)
        shown.append(
            {
                "state": trained.name,
                "expected": failing.expected,
                "answered": failing.answered,
                "findings": [
                    {**f.as_json(), "says": rewording.evidence_words(failing, f)}
                    for f in out[trained.name]
                ],
            }
        )
    Suggestion.objects.filter(pk=progress.pk).update(evidence=shown)
    return out


def _asked(
    plan: SuggestPlan,
    trained: Trained,
    planned: attribution.Plan,
    variant: int,
    user: Any,
    progress: _Progress,
) -> dict[str, Any] | None:
    questions, state = attribution.leave_out(
        {plan.qid: plan.question}, trained.revision.state, planned.part_of(variant)
    )
    outcome = decision_ask(
        backend=plan.backend,
        questions=questions,
        state=state,
        user=user,
        model=plan.model,
        version=plan.version,
        sample_state=trained.revision,
        logged=False,
        budgeted=True,  # the suggestion's calls count as in flight from its start
    )
    answered = outcome.checked.answers if outcome.error is None and outcome.checked else None
    progress.call(answered is not None)
    return answered


def _checked(plan: SuggestPlan, drafted: list[rewording.Drafted]) -> list[dict[str, Any]]:
    """Each drafted candidate as a question, checked: by the contract (an error refuses it),
    for the lints it raises that the version's words do not, against the version (a
    candidate that changes nothing, or says what an earlier one says, is not proven)."""
    document = plan.version.document
    paths = sample_state_paths(plan.version.question_set)
    was = {
        (w.code, w.path)
        for w in check.validate(document, limits=limits(), sample_states=paths).warnings
        if w.question == plan.qid
    }
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for d in drafted:
        one: dict[str, Any] = {
            "number": d.number,
            "why": d.why,
            "status": PENDING,
            "reason": "",
            "question": None,
            "lints": [],
            "verdict": None,
            "proof": None,
        }
        out.append(one)
        if d.texts is None:
            one.update(status=REFUSED, reason=d.problem)
            continue
        question = rewording.reworded(plan.question, d.texts)
        one["question"] = question
        digest = spec.question_sha256(question)
        if digest == plan.question.sha256:
            one.update(status=UNCHANGED, reason="it changes no word")
            continue
        if digest in seen:
            one.update(status=SAME, reason=f"the same words as candidate {seen[digest]}")
            continue
        seen[digest] = d.number
        result = check.validate(
            rewording.with_question(document, plan.qid, question),
            limits=limits(),
            sample_states=paths,
        )
        if result.errors:
            shown = "; ".join(f"{spec.shown_path(e.loc)}: {e.message}" for e in result.errors[:3])
            one.update(status=REFUSED, reason=f"it breaks the contract: {shown}")
            continue
        one["lints"] = [
            w.message
            for w in result.warnings
            if w.question == plan.qid and (w.code, w.path) not in was
        ]
    return out


def _prove(
    plan: SuggestPlan,
    suggestion: Suggestion,
    candidates: list[dict[str, Any]],
    provable: list[dict[str, Any]],
    user: Any,
    progress: _Progress,
) -> None:
    """Prove each checked candidate on the held-out states, saving each as it is proven."""
    if not provable:
        return
    document = plan.version.document

    def proof_plan(candidate: dict[str, Any]) -> proofs.ProofPlan:
        return proofs.proof_plan(
            version=plan.version,
            candidate=rewording.with_question(document, plan.qid, candidate["question"]),
            backend=plan.backend,
            user=user,
            model=plan.model,
            shuffles=plan.shuffles,
            max_calls=suggestion.max_calls,
        )

    first = proof_plan(provable[0])
    progress.stage(
        f"asking v{plan.version.number}'s words about {plural(len(first.states), 'held-out state')}"
    )
    before = proofs.proof_before(plan=first, user=user, on_call=progress.call, held=True)
    for i, candidate in enumerate(provable):
        progress.stage(
            f"proving candidate {candidate['number']} ({i + 1} of {len(provable)}) on "
            f"{plural(len(first.states), 'held-out state')}"
        )
        found = proofs.proof_run(
            plan=first if i == 0 else proof_plan(candidate),
            user=user,
            before=before,
            on_call=progress.call,
            held=True,  # the suggestion's calls count as in flight from its start
        )
        judged = found.questions[plan.qid]
        candidate["proof"] = {
            **judged.as_json(),
            "floor_words": judged.floor_words(),
            "notes": found.notes,
        }
        candidate["verdict"] = judged.verdict
        candidate["status"] = PROVEN
        Suggestion.objects.filter(pk=suggestion.pk).update(
            candidates_text=document_text(candidates)
        )
