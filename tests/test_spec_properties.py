"""Property tests: any valid document survives parse → canonical → parse unchanged, and the
validator returns errors (never raises) on arbitrary JSON."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from questions.core import check, spec
from tests.strategies import documents, json_values


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_any_valid_document_survives_parse_canonical_parse(value):
    first = spec.parse(value, limits=spec.DEFAULT_LIMITS)
    text = spec.canonical_json(first.to_json())
    second = spec.parse(spec.loads(text), limits=spec.DEFAULT_LIMITS)
    assert second == first
    assert second.form is first.form
    assert spec.canonical_json(second.to_json()) == text
    assert second.sha256 == first.sha256
    assert second.state_sha256 == first.state_sha256
    assert second.questions_json() == (
        value if first.form is spec.Form.BARE else value["questions"]
    )


@settings(max_examples=300)
@given(json_values)
def test_the_validator_never_raises_on_arbitrary_json(value):
    result = check.validate(value, limits=spec.DEFAULT_LIMITS)
    assert result.valid == (result.document is not None)
    assert all(isinstance(e, spec.Issue) for e in result.errors + result.warnings)


@settings(max_examples=300)
@given(
    st.sampled_from(["choice", "score", "noul", "other", 1]), json_values, json_values, json_values
)
def test_the_validator_never_raises_inside_a_question(qtype, criteria, instr, state):
    value = {
        "state": state,
        "questions": {"q": {"type": qtype, "criteria": criteria, "instructions": instr}},
    }
    result = check.validate(value, limits=spec.DEFAULT_LIMITS)
    assert result.valid == (result.document is not None)
    for error in result.errors:
        assert error.path and error.code and error.message
