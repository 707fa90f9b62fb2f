"""The official SDK as the oracle of the provider's contract (typesafe-sdk, a development
dependency): every document the console calls valid is accepted by the request model generated
from the provider's published API schema, or carries the warning that says why not; the SDK
sends what the console sends; and what the SDK refuses to send, the console refuses too.

The console's own calls stay on httpx: the SDK is read here, never in the run path."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typesafe_sdk._core.config import Config
from typesafe_sdk._core.endpoints import prepare_system_one
from typesafe_sdk._core.errors import TypeSafeError
from typesafe_sdk._schemas.models import SystemOneRequest

from questions.core import check, spec
from questions.engine import backends
from tests.strategies import json_values, names, question_maps

#: the warnings that say the provider's schema refuses what the console accepts
REFUSAL_CODES = {"state_refused_by_provider", "null_level_refused_by_provider"}
SDK = Config.resolve("oracle-key", "http://127.0.0.1:9", None, None, None, False)

provider_bodies = st.builds(
    lambda state, model, questions: {"state": state, "model": model, "questions": questions},
    json_values,
    names,
    question_maps,
)


def schema_accepts(body: dict[str, Any]) -> bool:
    try:
        SystemOneRequest.model_validate(body)
    except pydantic.ValidationError:
        return False
    return True


def sdk_body(body: dict[str, Any]) -> bytes:
    request, _ = prepare_system_one(
        SDK, body["state"], body["questions"], body["model"], None, None, None, dict
    )
    return request.content


def console_body(body: dict[str, Any]) -> bytes:
    parsed = spec.parse(body, limits=spec.DEFAULT_LIMITS)
    ask = backends.Ask(questions=parsed.questions, state=parsed.state, model=body["model"])
    _, payload, _ = backends.get("typesafe").wire().prepare(ask)
    return payload


def ordered(raw: bytes) -> Any:
    """The JSON value with every object as its list of pairs, in order: two texts are equal
    here when they hold the same keys in the same order and the same numbers, however spelled
    (`1e-07` and `1e-7`)."""
    return json.loads(raw, object_pairs_hook=list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider_bodies)
def test_what_the_console_calls_valid_the_schema_accepts_or_a_warning_says_why_not(body):
    result = check.validate(body, limits=spec.DEFAULT_LIMITS)
    if not result.valid:
        return
    warned = {w.code for w in result.warnings} & REFUSAL_CODES
    assert schema_accepts(body) is not bool(warned), (warned, result.warnings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider_bodies)
def test_the_console_sends_the_sdks_bytes_for_the_same_questions(body):
    result = check.validate(body, limits=spec.DEFAULT_LIMITS)
    if not result.valid or body["state"] is None:
        return
    assert ordered(console_body(body)) == ordered(sdk_body(body))


NOTHING_TO_JUDGE = [
    {"type": "noul"},
    {"type": "noul", "instructions": None},
    {"type": "noul", "criteria": None},
    {"type": "noul", "criteria": {}},
    {"type": "noul", "criteria": {"true": None, "false": None}},
]


@pytest.mark.parametrize("question", NOTHING_TO_JUDGE)
def test_what_the_sdk_refuses_to_send_the_console_calls_an_error(question):
    body = {"state": "text", "model": "jev-latest", "questions": {"n": question}}
    with pytest.raises(TypeSafeError, match="neither instructions nor criteria"):
        sdk_body(body)
    codes = [e.code for e in check.validate(body, limits=spec.DEFAULT_LIMITS).errors]
    assert codes == ["nothing_to_judge"]


def test_a_null_state_the_sdk_refuses_is_warned_at_the_state():
    body = {"state": None, "model": "m", "questions": {"n": {"type": "noul", "instructions": "?"}}}
    with pytest.raises(TypeSafeError, match="State is required"):
        sdk_body(body)
    warnings = check.validate(body, limits=spec.DEFAULT_LIMITS).warnings
    assert [w.path for w in warnings if w.code in REFUSAL_CODES] == ["state"]


@pytest.mark.parametrize(
    "entry",
    [["a list", "of words"], {"what": "w", "consequence": {"refund": True}}, [{"deep": [1]}]],
)
def test_structured_descriptions_the_schema_accepts_the_console_accepts_and_sends_unchanged(entry):
    body = {
        "state": {"ticket": "x"},
        "model": "jev-latest",
        "questions": {
            "c": {"type": "choice", "instructions": entry, "criteria": {"a": entry, "b": None}},
            "s": {"type": "score", "criteria": [entry, "high"]},
            "n": {"criteria": {"false": entry, "true": "yes"}, "type": "noul"},
        },
    }
    assert schema_accepts(body)
    assert check.validate(body, limits=spec.DEFAULT_LIMITS).valid
    assert console_body(body) == sdk_body(body)  # byte for byte, key order included
