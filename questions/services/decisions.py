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

from questions import backends, roles, spec
from questions.backends import Outcome
from questions.models import Decision, DecisionAnswer, SampleStateRevision, Version
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
) -> Outcome:
    """Ask the questions of `document` (any form) — or the parsed `questions` — about `state`
    through `backend`. An unknown backend, an invalid document or state, or a backend that is
    not configured sends nothing. `NotAllowed` when `user` may not ask a live backend. Every
    call that went out is recorded, whatever its outcome."""
    try:
        chosen = backends.get(backend)
    except backends.DecisionError as exc:
        return _refused(backend, model or "", exc.status, exc.detail)
    if chosen.live:
        require(user, roles.may_ask_live, LIVE_ASKERS_ONLY)
    try:
        model = model_name(model or chosen.default_model())
    except Invalid as exc:
        return _refused(backend, "", 422, f"Nothing was sent: {exc}")
    if questions is None:
        checked = spec.validate(
            {"state": state, "questions": _questions_of(document)}, limits=limits(), lints=False
        )
        errors = checked.errors
        questions = checked.document.questions if checked.document else None
    else:
        errors = spec.validate_state(state, limits=limits())
    if errors:
        shown = "; ".join(f"{e.path}: {e.message}" for e in errors[:3])
        return _refused(backend, model, 422, f"Nothing was sent: {shown}")
    ask = backends.Ask(questions=questions, state=state, model=model)
    outcome = chosen.ask(ask)
    outcome.ask = ask
    _refuse_unstorable(outcome)
    log.info(
        "decision backend=%s status=%s provider_status=%s provider_ms=%s total_ms=%.1f id=%s",
        backend,
        outcome.status,
        outcome.provider_status_code,
        None if outcome.provider_ms is None else round(outcome.provider_ms, 1),
        outcome.total_ms,
        outcome.request_id or "-",
    )
    if outcome.request_body is not None:
        outcome.decision_id = decision_record(
            outcome=outcome, ask=ask, user=user, version=version, sample_state=sample_state
        ).pk
    return outcome


def _refuse_unstorable(outcome: Outcome) -> None:
    """An answer holding a NUL character is one no database here stores (PostgreSQL's text and
    jsonb refuse it): the provider answered in an unexpected shape, the same on every store."""
    if outcome.checked is None:
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


@transaction.atomic
def decision_record(
    *,
    outcome: Outcome,
    ask: backends.Ask,
    user: Any,
    version: Version | None = None,
    sample_state: SampleStateRevision | None = None,
) -> Decision:
    """Store one live call: the exact request bytes sent (never the key; `request_sha256` is
    their canonical hash, for replay), the raw response, status,
    models, usage, cost, timing, request id, whether it is calibrated, who and when; and each
    checked answer keyed by
    (question sha256, state sha256, model)."""
    checked = outcome.checked
    error = outcome.error
    decision = Decision.objects.create(
        backend=outcome.backend,
        model_asked=ask.model,
        model_answered=(checked.model or "")[:200] if checked else "",
        request_text=outcome.request_text,
        request_sha256=spec.sha256_of(outcome.request_body),
        state_sha256=ask.state_sha256,
        questions_sha256=spec.sha256_of(ask.questions_json),
        response_text=_storable(outcome.response_text),
        status=outcome.status,
        provider_status_code=outcome.provider_status_code,
        detail=_storable(error.detail) if error else "",
        provider_detail=_storable(error.provider_detail or "") if error else "",
        usage=checked.usage if checked else None,
        cost=checked.cost if checked else None,
        provider_ms=outcome.provider_ms,
        total_ms=outcome.total_ms,
        request_id=_storable(outcome.request_id),
        calibrated=outcome.calibrated,
        version=version,
        sample_state=sample_state,
        user=roles.recorded_as(user),
    )
    if checked:
        DecisionAnswer.objects.bulk_create(
            DecisionAnswer(
                decision=decision,
                question_id=qid,
                question_sha256=ask.questions[qid].sha256,
                state_sha256=decision.state_sha256,
                model=ask.model,
                model_answered=decision.model_answered,
                answer=answer,
            )
            for qid, answer in checked.answers.items()
        )
    return decision
