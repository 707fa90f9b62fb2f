"""Decisions: ask a backend, and record every call that went out.

A live ask spends a provider call, so it is for authors and reviewers (`roles.may_ask_live`);
replaying recordings is a read. The questions are validated once, with the configured limits,
at the edge — or handed in already parsed (`questions=`), as the batch engine does.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import transaction

from questions import roles
from questions.core import check, spec
from questions.engine import backends
from questions.engine.backends import Outcome
from questions.models import Decision, DecisionAnswer, SampleStateRevision, Version
from questions.services import budget, bulk
from questions.services.errors import Invalid, model_name, require
from questions.services.versions import limits

log = logging.getLogger("questions.decisions")

LIVE_ASKERS_ONLY = "Only authors and reviewers ask a live backend; recordings are for everyone."


def _refused(backend: str, model: str, status: int, detail: str) -> Outcome:
    return Outcome(
        backend=backend,
        model_asked=model,
        live=False,
        error=backends.DecisionError(status, detail),
    )


def decision_ask(
    *,
    backend: str,
    state: Any,
    user: Any,
    document: Any = None,
    questions: dict[str, spec.Question] | None = None,
    model: str | None = None,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
    logged: bool = True,
    budgeted: bool = False,
) -> Outcome:
    """Ask the questions of `document` (any form) — or the parsed `questions` — about `state`
    through `backend`. An unknown backend, an invalid document or state, or a backend that is
    not configured sends nothing; nor does a provider's call that would pass the daily budget
    of `version`'s team (a 429 outcome with the figures; `budgeted`: the caller holds the call
    already, as a proof does). `NotAllowed` when `user` may not ask a live backend. Every call
    that went out is recorded, whatever its outcome; with `logged` off (one of many calls that
    log one line together) only a failed call is logged."""
    on = version.question_set if version is not None else None
    chosen = decision_backend(backend=backend, user=user, model=model, on=on)
    if isinstance(chosen, Outcome):
        return chosen
    chosen, model = chosen
    if questions is None:
        checked = check.validate(
            {"state": state, "questions": _questions_of(document)}, limits=limits(), lints=False
        )
        refused = _refused_for(backend, model, checked.errors)
        questions = checked.document.questions if checked.document else None
    else:
        refused = decision_state_refusal(backend=backend, model=model, state=state)
    if refused:
        return refused
    ask = backends.Ask(questions=questions, state=state, model=model)
    counted = on is not None and not budgeted and budget.calls_through(backend)
    try:
        with budget.budget_hold(team=on, calls=1 if counted else 0, what="This ask"):
            outcome = decision_conclude(chosen.ask(ask), ask, logged=logged)
            if outcome.request_body is not None:
                outcome.decision_id = decision_record(
                    outcome=outcome, ask=ask, user=user, version=version, sample_state=sample_state
                )
    except budget.OverBudget as exc:
        return _refused(backend, model, exc.status, str(exc))
    return outcome


def decision_backend(
    *, backend: str, user: Any, model: str | None, on: Any
) -> tuple[backends.Backend, str] | Outcome:
    """The backend and model an ask goes through, or the refused outcome (nothing is sent).
    `NotAllowed` when `user` may not ask a live backend in the team of `on` (a set; None: in
    any team)."""
    try:
        chosen = backends.get(backend)
    except backends.DecisionError as exc:
        return _refused(backend, model or "", exc.status, exc.detail)
    if chosen.live:
        require(user, roles.may_ask_live, LIVE_ASKERS_ONLY, on=on)
    try:
        return chosen, model_name(model or chosen.default_model())
    except Invalid as exc:
        return _refused(backend, "", 422, f"Nothing was sent: {exc}")


def decision_state_refusal(*, backend: str, model: str, state: Any) -> Outcome | None:
    """The refused outcome when `state` is not one to send (nothing is sent), else None."""
    return _refused_for(backend, model, spec.validate_state(state, limits=limits()))


def _refused_for(backend: str, model: str, errors: list) -> Outcome | None:
    if not errors:
        return None
    shown = "; ".join(f"{spec.shown_path(e.loc)}: {e.message}" for e in errors[:3])
    return _refused(backend, model, 422, f"Nothing was sent: {shown}")


def decision_conclude(outcome: Outcome, ask: backends.Ask, *, logged: bool = True) -> Outcome:
    """What every ask does with what came back, before it is recorded: keep what was asked,
    refuse an answer no database stores, log the call (never the state or the key). With
    `logged` False (a batch run, which logs one line for the run) only a failed call is
    logged."""
    outcome.ask = ask
    _refuse_unstorable(outcome)
    if logged or outcome.error is not None:
        log_call(outcome)
    return outcome


def log_call(outcome: Outcome) -> None:
    """One line for one call: backend, status, the provider's status and time, the request id."""
    log.info(
        "decision backend=%s status=%s provider_status=%s provider_ms=%s total_ms=%.1f id=%s",
        outcome.backend,
        outcome.status,
        outcome.provider_status_code,
        None if outcome.provider_ms is None else round(outcome.provider_ms, 1),
        outcome.total_ms,
        outcome.request_id or "-",
    )


def _refuse_unstorable(outcome: Outcome) -> None:
    """An answer holding a NUL character is one no database here stores (PostgreSQL's text and
    jsonb refuse it): the provider answered in an unexpected shape, the same on every store."""
    if outcome.checked is None:
        return
    text = outcome.response_text  # what a wire's answers were read from: no NUL there, none in them
    if text and "\\u0000" not in text and "\x00" not in text:
        return
    if "\\u0000" in json.dumps(outcome.checked.to_json()):
        outcome.checked = None
        outcome.error = backends.DecisionError(
            502,
            "The provider's answer was rejected: it holds a NUL character.",
            provider_status_code=outcome.provider_status_code,
        )


def _questions_of(document: Any) -> Any:
    """The questions map of a document in any form (a bare map is its own)."""
    if isinstance(document, dict) and spec.detect_form(document) is not spec.Form.BARE:
        return document.get("questions")
    return document


def _storable(text: str) -> str:
    """Text as a database can keep it: a NUL character becomes U+FFFD."""
    return text.replace("\x00", "\ufffd")


#: the most characters of a raw answer a decision keeps (the answers themselves are kept whole,
#: checked, in its answer rows); a longer one is cut there and says so
RESPONSE_TEXT_KEPT = 64 * 1024


def _kept_response(text: str) -> str:
    """A raw answer as a decision stores it: whole up to RESPONSE_TEXT_KEPT characters, else its
    start, marked as cut (with how long it was)."""
    if len(text) <= RESPONSE_TEXT_KEPT:
        return _storable(text)
    cut = f"\n[cut: the first {RESPONSE_TEXT_KEPT:,} of {len(text):,} characters are kept]"
    return _storable(text[:RESPONSE_TEXT_KEPT]) + cut


@transaction.atomic
def decision_record(
    *,
    outcome: Outcome,
    ask: backends.Ask,
    user: Any,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
) -> int:
    """Store one live call, and return its id: the exact request bytes sent (never the key;
    `request_sha256` is their canonical hash, for replay), the raw response, status, models,
    usage, cost, timing, request id, whether it is calibrated, who and when; and each checked
    answer keyed by (question sha256, state sha256, model)."""
    [decision] = decisions_record(
        [
            decision_rows(
                outcome=outcome, ask=ask, user=user, version=version, sample_state=sample_state
            )
        ]
    )
    return decision


#: one call's records, unsaved: its Decision row and its DecisionAnswer rows, as field values
Rows = tuple[dict[str, Any], list[dict[str, Any]]]


def decision_rows(
    *,
    outcome: Outcome,
    ask: backends.Ask,
    user: Any,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
) -> Rows:
    """The unsaved records of one live call (`decision_record` says what they hold), as the
    field values `bulk.insert` takes."""
    checked = outcome.checked
    error = outcome.error
    recorder = roles.recorded_as(user)
    model_answered = (checked.model or "")[:200] if checked else ""
    decision = {
        "backend": outcome.backend,
        "model_asked": ask.model,
        "model_answered": model_answered,
        "request_text": outcome.request_text,
        "request_sha256": outcome.request_sha256 or spec.sha256_of(outcome.request_body),
        "state_sha256": ask.state_sha256,
        "questions_sha256": backends.encoded_questions(ask.questions).sha256,
        "response_text": _kept_response(outcome.response_text),
        "status": outcome.status,
        "provider_status_code": outcome.provider_status_code,
        "detail": _storable(error.detail) if error else "",
        "provider_detail": _storable(error.provider_detail or "") if error else "",
        "usage": checked.usage if checked else None,
        "cost": checked.cost if checked else None,
        "provider_ms": outcome.provider_ms,
        "total_ms": outcome.total_ms,
        "request_id": _storable(outcome.request_id),
        "calibrated": outcome.calibrated,
        "version_id": version.pk if version else None,
        "sample_state_id": sample_state.pk if sample_state else None,
        "user_id": recorder.pk if recorder else None,
    }
    answers = [
        {
            "question_id": qid,
            "question_sha256": ask.questions[qid].sha256,
            "state_sha256": ask.state_sha256,
            "model": ask.model,
            "model_answered": model_answered,
            "answer": bulk.json_text(answer),  # encoded once: the run's item reuses it
        }
        for qid, answer in (checked.answers.items() if checked else ())
    ]
    return decision, answers


def decisions_record(rows: list[Rows]) -> list[int]:
    """Store the records of many calls in two bulk inserts (the caller holds the transaction);
    the decisions' ids, in order."""
    ids = bulk.insert(Decision, [decision for decision, _ in rows])
    bulk.insert(
        DecisionAnswer,
        [
            {**answer, "decision_id": pk}
            for pk, (_, answers) in zip(ids, rows, strict=True)
            for answer in answers
        ],
        ids=False,
    )
    return ids
