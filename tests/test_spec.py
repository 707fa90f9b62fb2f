"""The question-set contract: every limit at, just below and just above its bound; every entry
shape; the four document forms; canonical form and hashes; absent versus null."""

import hashlib
import json
from pathlib import Path

import pytest

from questions.core import check, spec

# A copy of ../shared/examples, so that a clone anywhere runs the same checks.
EXAMPLES = Path(__file__).resolve().parent / "examples"


def choice(n: int, entry="described") -> dict:
    return {"type": "choice", "criteria": {f"o{i}": f"{entry} {i}" for i in range(n)}}


def score(n: int) -> dict:
    return {"type": "score", "criteria": [f"level {i} words" for i in range(n)]}


def codes(result: spec.Validation) -> list[str]:
    return [e.code for e in result.errors]


def warning_codes(result: spec.Validation) -> list[str]:
    return [w.code for w in result.warnings]


def only_error(result: spec.Validation) -> spec.Issue:
    assert len(result.errors) == 1, result.errors
    return result.errors[0]


# --- counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "valid"), [(1, False), (2, True), (3, True), (254, True), (255, True), (256, False)]
)
def test_choice_option_count_bounds(n, valid):
    result = check.validate({"pick": choice(n)}, limits=spec.DEFAULT_LIMITS)
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert error.question == "pick"
        assert error.path == "questions.pick.criteria"
        assert (error.limit, error.actual) == ((2, 1) if n < 2 else (255, 256))
        assert f"has {n} option" in error.message


def test_choice_with_no_options_and_the_message_authors_read():
    error = only_error(
        check.validate({"pick": {"type": "choice", "criteria": {}}}, limits=spec.DEFAULT_LIMITS)
    )
    assert error.code == "too_few_options"
    assert error.message == "choice `pick` has 0 options; at least 2 options"
    over = only_error(check.validate({"intent": choice(256)}, limits=spec.DEFAULT_LIMITS))
    assert over.message == "choice `intent` has 256 options; at most 255"


@pytest.mark.parametrize(
    ("n", "valid"), [(1, False), (2, True), (3, True), (9, True), (10, True), (11, False)]
)
def test_score_level_count_bounds(n, valid):
    result = check.validate({"urgency": score(n)}, limits=spec.DEFAULT_LIMITS)
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert error.code == ("too_few_levels" if n < 2 else "too_many_levels")
        assert error.question == "urgency"
        assert (error.limit, error.actual) == ((2, 1) if n < 2 else (10, 11))


def noul_set(n: int) -> dict:
    return {f"q{i}": {"type": "noul", "instructions": f"Statement {i}?"} for i in range(n)}


@pytest.mark.parametrize(
    ("n", "valid"), [(0, False), (1, True), (2, True), (31, True), (32, True), (33, False)]
)
def test_question_count_bounds(n, valid):
    result = check.validate(noul_set(n), limits=spec.DEFAULT_LIMITS)
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert error.code == ("too_few_questions" if n == 0 else "too_many_questions")
        assert (error.limit, error.actual) == ((1, 0) if n == 0 else (32, 33))


def test_question_count_follows_the_configured_limit():
    limits = spec.Limits(max_questions=3)
    assert check.validate(noul_set(3), limits=limits).valid
    error = only_error(check.validate(noul_set(4), limits=limits))
    assert (error.code, error.limit, error.actual) == ("too_many_questions", 3, 4)
    assert error.message == "the set has 4 questions; at most 3"


# --- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "valid"), [(1, True), (127, True), (128, True), (129, False)])
def test_question_id_length(length, valid):
    qid = "q" * length
    result = check.validate(
        {qid: {"type": "noul", "instructions": "Is it so?"}}, limits=spec.DEFAULT_LIMITS
    )
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert (error.code, error.limit, error.actual) == ("question_id_too_long", 128, 129)
        assert error.question == qid


@pytest.mark.parametrize(("length", "valid"), [(127, True), (128, True), (129, False)])
def test_option_name_length(length, valid):
    name = "é" * length  # characters, not bytes
    doc = {"pick": {"type": "choice", "criteria": {name: "this one", "other": "anything else"}}}
    result = check.validate(doc, limits=spec.DEFAULT_LIMITS)
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert (error.code, error.limit, error.actual) == ("option_name_too_long", 128, 129)
        assert error.path == f"questions.pick.criteria.{name}"


@pytest.mark.parametrize("blank", ["", " ", "\t\n"])
def test_blank_names_are_refused(blank):
    assert codes(
        check.validate(
            {blank: {"type": "noul", "instructions": "Is it so?"}}, limits=spec.DEFAULT_LIMITS
        )
    ) == ["blank_question_id"]
    doc = {"pick": {"type": "choice", "criteria": {blank: "x", "other": "y"}}}
    assert codes(check.validate(doc, limits=spec.DEFAULT_LIMITS)) == ["blank_option_name"]


def test_repeated_keys_in_the_text_are_duplicates():
    text = '{"q": {"type": "noul"}, "q": {"type": "noul", "instructions": "?"}}'
    error = only_error(check.validate(spec.loads(text), limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.question) == ("duplicate_question_id", "q")
    text = '{"q": {"type": "choice", "criteria": {"a": "x", "b": "y", "a": "z"}}}'
    error = only_error(check.validate(spec.loads(text), limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.path) == ("duplicate_option_name", "questions.q.criteria.a")


# --- entries -------------------------------------------------------------------------------------


ENTRY_SHAPES = [
    None,
    "a description",
    "",
    {},
    {"what": "w"},
    {"not_for": "n"},
    {"examples": []},
    {"examples": ["e1", "e2"]},
    {"what": "w", "not_for": "n", "examples": ["e"]},
    # structured descriptions the provider's schema accepts (seed 002): arrays, other keys
    ["a list", "of words"],
    [],
    {"description": "x"},
    {"what": "w", "consequence": {"refund": True, "within_days": 14}},
    [{"what": "nested"}, ["deeper", 1.5], None],
]


@pytest.mark.parametrize("entry", ENTRY_SHAPES)
def test_every_entry_shape_is_accepted_for_options_levels_and_noul_cases(entry):
    doc = {
        "c": {"type": "choice", "criteria": {"a": entry, "other": "none of these"}},
        "s": {"type": "score", "criteria": [entry, "high"]},
        "n": {"type": "noul", "instructions": "It is high.", "criteria": {"true": entry}},
    }
    result = check.validate(doc, limits=spec.DEFAULT_LIMITS)
    assert result.valid
    # kept as written: the parsed questions give back the same value, in the same order
    assert wire(result.document.questions_json()) == wire(doc)


def wire(value):
    return spec.wire_json(value)


@pytest.mark.parametrize("entry", [1, 2.5, True])
def test_an_entry_that_is_a_number_or_a_boolean_is_refused_where_it_is(entry):
    result = check.validate(
        {"c": {"type": "choice", "criteria": {"a": entry, "b": "y"}}}, limits=spec.DEFAULT_LIMITS
    )
    error = only_error(result)
    assert (error.code, error.question, error.path) == (
        "invalid_entry",
        "c",
        "questions.c.criteria.a",
    )
    level = only_error(
        check.validate(
            {"s": {"type": "score", "criteria": ["low", entry]}}, limits=spec.DEFAULT_LIMITS
        )
    )
    assert (level.code, level.path) == ("invalid_entry", "questions.s.criteria.1")


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"what": 1}, "what"),
        ({"what": None}, "what"),
        ({"not_for": ["x"]}, "not_for"),
        ({"examples": "one"}, "examples"),
        ({"examples": ["ok", 2]}, "examples"),
    ],
)
def test_a_documented_entry_key_holding_something_else_is_a_warning_not_a_refusal(entry, where):
    result = check.validate(
        {"c": {"type": "choice", "criteria": {"a": entry, "other": "none"}}},
        limits=spec.DEFAULT_LIMITS,
    )
    assert result.valid
    [warning] = [w for w in result.warnings if w.code == "unusual_entry_field"]
    assert warning.path == f"questions.c.criteria.a.{where}"


def test_a_key_repeated_inside_a_structured_description_is_an_error_where_it_is():
    text = '{"c": {"type": "choice", "criteria": {"a": [{"k": 1, "k": 2}], "b": "y"}}}'
    error = only_error(check.validate(spec.loads(text), limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.path) == ("duplicate_entry_key", "questions.c.criteria.a.0.k")


def test_lints_read_the_words_inside_structured_descriptions():
    assert spec.entry_text({"what": "w", "not_for": "n", "examples": ["e"]}) == "w n e"
    assert spec.entry_text(["refund", {"within": 14, "flag": True, "why": "late"}]) == (
        "refund 14 late"
    )
    same = {
        "c": {
            "type": "choice",
            "criteria": {"a": ["Refund", "now"], "b": {"say": "refund now"}, "other": "none"},
        }
    }
    result = check.validate(same, limits=spec.DEFAULT_LIMITS)
    assert "duplicate_description" in codes_of(result.warnings)


def codes_of(issues):
    return [i.code for i in issues]


# --- question shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize("instructions", ["text", {"read": "`state`"}, ["a", {"b": 1}]])
def test_instructions_forms(instructions):
    assert check.validate(
        {"n": {"type": "noul", "instructions": instructions}}, limits=spec.DEFAULT_LIMITS
    ).valid


NOTHING_TO_JUDGE = [
    {"type": "noul"},
    {"type": "noul", "instructions": None},
    {"type": "noul", "instructions": "  "},
    {"type": "noul", "instructions": {}},
    {"type": "noul", "criteria": None},
    {"type": "noul", "criteria": {}},
    {"type": "noul", "criteria": {"true": None, "false": None}},
    {"type": "noul", "instructions": None, "criteria": {"true": "", "false": []}},
]


@pytest.mark.parametrize("question", NOTHING_TO_JUDGE)
def test_a_noul_with_nothing_to_judge_is_an_error_of_its_own(question):
    error = only_error(check.validate({"n": question}, limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.path, error.question) == ("nothing_to_judge", "questions.n", "n")


@pytest.mark.parametrize(
    "question",
    [
        {"type": "noul", "criteria": {"true": "It is late."}},
        {"type": "noul", "instructions": None, "criteria": {"false": {"what": "On time"}}},
        {"type": "noul", "instructions": ["`state.eta`", "is past"]},
    ],
)
def test_a_noul_judged_by_its_cases_or_structured_instructions_is_valid(question):
    assert check.validate({"n": question}, limits=spec.DEFAULT_LIMITS).valid


@pytest.mark.parametrize("instructions", [1, 2.5, True])
def test_instructions_of_other_types_are_refused(instructions):
    error = only_error(
        check.validate(
            {"n": {"type": "noul", "instructions": instructions}}, limits=spec.DEFAULT_LIMITS
        )
    )
    assert (error.code, error.path) == ("invalid_instructions", "questions.n.instructions")


@pytest.mark.parametrize(
    ("question", "code"),
    [
        ({}, "missing_type"),
        ({"type": "choise"}, "unknown_type"),
        ({"type": 3}, "unknown_type"),
        ({"type": "noul", "instructions": "x", "description": "x"}, "unknown_question_field"),
        ({"type": "choice"}, "invalid_criteria"),
        ({"type": "choice", "criteria": ["a", "b"]}, "invalid_criteria"),
        ({"type": "score", "criteria": {"a": "b", "c": "d"}}, "invalid_criteria"),
        ({"type": "score"}, "invalid_criteria"),
        ({"type": "noul", "criteria": "yes"}, "invalid_criteria"),
        ({"type": "noul", "criteria": []}, "invalid_criteria"),
        ({"type": "noul", "instructions": "x", "criteria": {"maybe": "x"}}, "invalid_noul_key"),
        ({"type": "noul", "instructions": "x", "criteria": {"True": "x"}}, "invalid_noul_key"),
    ],
)
def test_bad_questions(question, code):
    error = only_error(check.validate({"q": question}, limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.question) == (code, "q")


@pytest.mark.parametrize("value", ["a question", 1, None, [], True])
def test_a_question_must_be_an_object(value):
    error = only_error(
        check.validate(
            {"q": value, "r": {"type": "noul", "instructions": "Is it so?"}},
            limits=spec.DEFAULT_LIMITS,
        )
    )
    assert (error.code, error.path) == ("question_not_object", "questions.q")


@pytest.mark.parametrize("value", [[], "x", 1, None, True])
def test_a_document_must_be_an_object(value):
    result = check.validate(value, limits=spec.DEFAULT_LIMITS)
    assert codes(result) == ["document_not_object"]
    assert result.document is None
    assert result.sha256 is None


def test_every_error_is_reported_not_just_the_first():
    doc = {"a": choice(1), "b": score(11), "c": {"type": "noul", "criteria": {"x": "y"}}}
    assert sorted(codes(check.validate(doc, limits=spec.DEFAULT_LIMITS))) == [
        "invalid_noul_key",
        "too_few_options",
        "too_many_levels",
    ]


# --- noul criteria and absent versus null -----------------------------------------------------


NOUL_CRITERIA = [
    spec.ABSENT,
    None,
    {},
    {"true": "yes"},
    {"false": None},
    {"true": "a", "false": {"what": "b"}},
]


@pytest.mark.parametrize("criteria", NOUL_CRITERIA)
def test_noul_criteria_survive_parse_canonical_parse(criteria):
    question = {"type": "noul", "instructions": "Is it raining?"}
    if criteria is not spec.ABSENT:
        question["criteria"] = criteria
    doc = spec.parse({"n": question}, limits=spec.DEFAULT_LIMITS)
    again = spec.parse(spec.loads(spec.canonical_json(doc.to_json())), limits=spec.DEFAULT_LIMITS)
    assert again.questions["n"].criteria == criteria
    assert ("criteria" in again.to_json()["n"]) is (criteria is not spec.ABSENT)
    assert again.sha256 == doc.sha256


def test_the_four_noul_criteria_values_hash_differently():
    hashes = set()
    for criteria in NOUL_CRITERIA[:4]:
        q = {"type": "noul", "instructions": "Is it so?"}
        if criteria is not spec.ABSENT:
            q["criteria"] = criteria
        hashes.add(spec.parse({"n": q}, limits=spec.DEFAULT_LIMITS).sha256)
    assert len(hashes) == 4


def test_absent_and_null_instructions_are_different():
    case = {"true": "It rains."}
    absent = spec.parse({"n": {"type": "noul", "criteria": case}}, limits=spec.DEFAULT_LIMITS)
    null = spec.parse(
        {"n": {"type": "noul", "instructions": None, "criteria": case}}, limits=spec.DEFAULT_LIMITS
    )
    assert absent.questions["n"].instructions is spec.ABSENT
    assert null.questions["n"].instructions is None
    assert absent.sha256 != null.sha256


def test_null_state_is_a_value_and_no_state_is_not():
    null = spec.parse({"state": None, "questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS)
    assert null.state is None
    assert null.state_sha256 == hashlib.sha256(b"null").hexdigest()
    bare = spec.parse(noul_set(1), limits=spec.DEFAULT_LIMITS)
    assert bare.state is spec.ABSENT
    assert bare.state_sha256 is None
    again = spec.parse(spec.loads(spec.canonical_json(null.to_json())), limits=spec.DEFAULT_LIMITS)
    assert "state" in again.to_json()
    assert again.state is None


# --- the document forms ------------------------------------------------------------------------


def test_bare_map():
    result = check.validate(noul_set(2), limits=spec.DEFAULT_LIMITS)
    assert result.form is spec.Form.BARE
    assert list(result.document.questions) == ["q0", "q1"]


def test_runtime_request_example_is_a_decisions_body():
    doc = spec.parse(
        json.loads((EXAMPLES / "runtime-request.json").read_text()), limits=spec.DEFAULT_LIMITS
    )
    assert doc.form is spec.Form.DECISIONS
    assert list(doc.questions) == ["intent", "start", "energy"]
    assert doc.questions["intent"].option_names == ["explicit", "incidental", "none"]
    assert doc.questions["energy"].level_count == 4
    assert doc.state["body"] == "at rest"


def test_provider_request_example_is_a_provider_body():
    doc = spec.parse(
        json.loads((EXAMPLES / "typesafe-request.json").read_text()), limits=spec.DEFAULT_LIMITS
    )
    assert doc.form is spec.Form.PROVIDER
    assert doc.meta == {"model": "jev-latest"}
    assert doc.state.startswith("Help!")


@pytest.mark.parametrize("state", [None, "text", 3, 1.5, True, [], [1, 2], {}, {"a": [None]}])
def test_any_json_state_is_accepted(state):
    assert check.validate(
        {"state": state, "questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS
    ).valid


def test_decisions_body_with_profile():
    doc = spec.parse(
        {"state": {}, "questions": noul_set(1), "profile": "support"}, limits=spec.DEFAULT_LIMITS
    )
    assert doc.form is spec.Form.DECISIONS
    assert doc.meta == {"profile": "support"}
    error = only_error(
        check.validate(
            {"state": {}, "questions": noul_set(1), "profile": " "}, limits=spec.DEFAULT_LIMITS
        )
    )
    assert error.code == "invalid_profile"
    assert codes(
        check.validate(
            {"state": {}, "questions": noul_set(1), "profile": 3}, limits=spec.DEFAULT_LIMITS
        )
    ) == ["invalid_profile"]
    assert check.validate(
        {"state": {}, "questions": noul_set(1), "profile": None}, limits=spec.DEFAULT_LIMITS
    ).valid


def test_bodies_need_a_state_and_the_provider_body_a_model():
    assert codes(check.validate({"questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS)) == [
        "missing_state"
    ]
    assert codes(
        check.validate({"questions": noul_set(1), "profile": "p"}, limits=spec.DEFAULT_LIMITS)
    ) == ["missing_state"]
    provider = {"state": "s", "model": "", "questions": noul_set(1)}
    assert codes(check.validate(provider, limits=spec.DEFAULT_LIMITS)) == ["invalid_model"]
    assert codes(check.validate({"state": "s", "profile": "p"}, limits=spec.DEFAULT_LIMITS)) == [
        "missing_questions"
    ]


@pytest.mark.parametrize("questions", [[], "x", None])
def test_a_body_whose_questions_are_not_a_map(questions):
    result = check.validate({"state": 1, "questions": questions}, limits=spec.DEFAULT_LIMITS)
    assert codes(result) == ["questions_not_object"]


def test_unknown_body_fields_are_warned_about_not_dropped_silently():
    result = check.validate(
        {"state": 1, "questions": noul_set(1), "stream": True}, limits=spec.DEFAULT_LIMITS
    )
    assert result.valid
    assert "unknown_field" in warning_codes(result)


def test_a_bare_map_may_use_wrapper_words_as_ids():
    doc = spec.parse(
        {
            "state": {"type": "noul", "instructions": "Is it so?"},
            "questions": {"type": "noul", "instructions": "Is it so?"},
        },
        limits=spec.DEFAULT_LIMITS,
    )
    assert doc.form is spec.Form.BARE
    assert list(doc.questions) == ["state", "questions"]


def export_document(questions: dict, **overrides) -> dict:
    doc = {
        "format": spec.EXPORT_FORMAT,
        "question_set": "gestures",
        "version": 3,
        "status": "approved",
        "sha256": spec.questions_sha256(questions),
        "model": "jev-latest",
        "approved_by": "reviewer",
        "approved_at": "2026-11-29T12:00:00Z",
        "questions": questions,
    }
    doc.update(overrides)
    return doc


def test_export_document():
    questions = json.loads((EXAMPLES / "runtime-request.json").read_text())["questions"]
    doc = spec.parse(export_document(questions), limits=spec.DEFAULT_LIMITS)
    assert doc.form is spec.Form.EXPORT
    assert doc.questions_json() == questions
    assert doc.sha256 == spec.questions_sha256(questions)
    assert doc.meta["version"] == 3


def test_export_document_checks_its_own_fields():
    questions = noul_set(1)
    assert codes(
        check.validate(export_document(questions, format="other@9"), limits=spec.DEFAULT_LIMITS)
    ) == ["unsupported_format"]
    assert codes(
        check.validate(export_document(questions, version=0), limits=spec.DEFAULT_LIMITS)
    ) == ["invalid_version"]
    assert codes(
        check.validate(export_document(questions, version=True), limits=spec.DEFAULT_LIMITS)
    ) == ["invalid_version"]
    assert codes(
        check.validate(export_document(questions, status="live"), limits=spec.DEFAULT_LIMITS)
    ) == ["invalid_status"]
    tampered = export_document(questions, sha256="0" * 64)
    error = only_error(check.validate(tampered, limits=spec.DEFAULT_LIMITS))
    assert (error.code, error.actual) == ("sha256_mismatch", spec.questions_sha256(questions))
    minimal = {"format": spec.EXPORT_FORMAT, "questions": questions}
    assert check.validate(minimal, limits=spec.DEFAULT_LIMITS).valid


# --- state size ----------------------------------------------------------------------------------


def state_of_bytes(n: int) -> str:
    return "x" * (n - 2)  # a JSON string serialises with its two quotes


@pytest.mark.parametrize(("size", "valid"), [(262_143, True), (262_144, True), (262_145, False)])
def test_state_size_bound(size, valid):
    state = state_of_bytes(size)
    assert len(spec.canonical_json(state)) == size
    result = check.validate({"state": state, "questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS)
    assert result.valid is valid
    if not valid:
        error = only_error(result)
        assert (error.code, error.limit, error.actual) == ("state_too_large", 262_144, 262_145)
        assert error.path == "state"
        assert "xxxx" not in error.message  # the state is never echoed


def test_state_size_follows_the_configured_limit_and_counts_utf8_bytes():
    limits = spec.Limits(max_state_bytes=10)
    assert check.validate({"state": "é" * 4, "questions": noul_set(1)}, limits=limits).valid
    result = check.validate({"state": "é" * 5, "questions": noul_set(1)}, limits=limits)
    assert only_error(result).actual == 12


# --- lints -------------------------------------------------------------------------------------


def test_lint_an_option_named_only_by_its_id():
    doc = {
        "pick": {
            "type": "choice",
            "criteria": {
                "billing": None,
                "support": "Technical help",
                "other": "",
                "review": {},
                "x": "x",
            },
        }
    }
    result = check.validate(doc, limits=spec.DEFAULT_LIMITS)
    assert result.valid
    flagged = [w.path for w in result.warnings if w.code == "undescribed_option"]
    assert flagged == [
        f"questions.pick.criteria.{name}" for name in ("billing", "other", "review", "x")
    ]


def test_lint_a_level_without_words():
    result = check.validate(
        {"s": {"type": "score", "criteria": ["low", None, {"what": " "}]}},
        limits=spec.DEFAULT_LIMITS,
    )
    undescribed = [w.path for w in result.warnings if w.code == "undescribed_level"]
    assert undescribed == ["questions.s.criteria.1", "questions.s.criteria.2"]


# --- where the provider's schema is narrower than the contract -----------------------------------


@pytest.mark.parametrize("state", [None, True, False, 0, 42, 1.5])
def test_a_state_the_provider_refuses_is_valid_with_a_warning_naming_the_wires(state):
    body = {"state": state, "questions": {"n": {"type": "noul", "instructions": "It is late."}}}
    result = check.validate(body, limits=spec.DEFAULT_LIMITS)
    assert result.valid
    [warning] = [w for w in result.warnings if w.code == "state_refused_by_provider"]
    assert warning.path == "state"
    assert "`typesafe` and `openrouter`" in warning.message
    assert "runtime" in warning.message


@pytest.mark.parametrize("state", ["text", "", {}, {"a": None}, [], [1, None]])
def test_a_state_the_provider_takes_gets_no_wire_warning(state):
    body = {"state": state, "questions": {"n": {"type": "noul", "instructions": "It is late."}}}
    result = check.validate(body, limits=spec.DEFAULT_LIMITS)
    assert "state_refused_by_provider" not in codes_of(result.warnings)


def test_a_null_score_level_is_valid_with_a_warning_at_the_level():
    doc = {"s": {"type": "score", "instructions": "Rate it.", "criteria": ["low", None, "high"]}}
    result = check.validate(doc, limits=spec.DEFAULT_LIMITS)
    assert result.valid
    [warning] = [w for w in result.warnings if w.code == "null_level_refused_by_provider"]
    assert (warning.path, warning.question) == ("questions.s.criteria.1", "s")
    # a null option description is the provider's too: no wire warning there
    choice = {"c": {"type": "choice", "criteria": {"a": None, "other": "none"}}}
    refusals = spec.provider_refusals(spec.parse(choice, limits=spec.DEFAULT_LIMITS).questions)
    assert refusals == []


def test_lint_no_escape_option():
    no_escape = {"t": {"type": "choice", "criteria": {"billing": "Payments", "tech": "Bugs"}}}
    assert "no_escape_option" in warning_codes(
        check.validate(no_escape, limits=spec.DEFAULT_LIMITS)
    )
    for escape in (
        {"other": "anything else"},
        {"not_sure": "can't tell"},
        {"misc": "None of the above"},
    ):
        doc = {"t": {"type": "choice", "criteria": {"billing": "Payments", **escape}}}
        assert "no_escape_option" not in warning_codes(
            check.validate(doc, limits=spec.DEFAULT_LIMITS)
        ), escape


def test_lint_two_options_or_levels_with_the_same_description():
    doc = {
        "t": {
            "type": "choice",
            "criteria": {"a": "Same words", "b": {"what": "same  WORDS"}, "other": "else"},
        },
        "s": {"type": "score", "criteria": ["low", "mid", "low"]},
    }
    dupes = [
        w
        for w in check.validate(doc, limits=spec.DEFAULT_LIMITS).warnings
        if w.code == "duplicate_description"
    ]
    assert [(w.question, w.path) for w in dupes] == [
        ("t", "questions.t.criteria.b"),
        ("s", "questions.s.criteria.2"),
    ]


def test_lint_compound_noul_statement():
    compound = {"n": {"type": "noul", "instructions": "Is it urgent and about billing?"}}
    assert warning_codes(check.validate(compound, limits=spec.DEFAULT_LIMITS)) == [
        "compound_statement"
    ]
    single = {"n": {"type": "noul", "instructions": "Is it urgent? (Android counts)"}}
    assert warning_codes(check.validate(single, limits=spec.DEFAULT_LIMITS)) == []


def test_lint_token_budget_warns_but_never_refuses():
    state = "word " * 30_000  # about 37k tokens at four bytes a token
    result = check.validate({"state": state, "questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS)
    assert result.valid
    budget = [w for w in result.warnings if w.code == "token_budget"]
    assert budget and budget[0].limit == 32_000 and budget[0].actual > 32_000 * 0.8
    small = check.validate({"state": "short", "questions": noul_set(1)}, limits=spec.DEFAULT_LIMITS)
    assert "token_budget" not in warning_codes(small)


def test_lints_never_repair_the_document():
    doc = {"pick": {"type": "choice", "criteria": {"a": None, "b": None}}}
    parsed = spec.parse(doc, limits=spec.DEFAULT_LIMITS)
    assert parsed.questions_json() == doc


# --- canonical form and hashes -----------------------------------------------------------------


def test_canonical_json_sorts_keys_keeps_arrays_and_drops_whitespace():
    value = {"b": [3, 1, 2], "a": {"z": "ü", "y": None}}
    assert spec.canonical_json(value) == '{"a":{"y":null,"z":"ü"},"b":[3,1,2]}'.encode()


def test_hashes_of_a_document_a_question_and_a_state():
    q = {"type": "noul", "instructions": "Is it late?"}
    assert (
        spec.question_sha256(q)
        == hashlib.sha256(b'{"instructions":"Is it late?","type":"noul"}').hexdigest()
    )
    doc = spec.parse({"late": q}, limits=spec.DEFAULT_LIMITS)
    assert doc.questions["late"].sha256 == spec.question_sha256(q)
    assert doc.sha256 == spec.sha256_of({"late": q})
    # ids are addressing: the same words under another id are the same question content
    assert (
        spec.parse({"other_id": q}, limits=spec.DEFAULT_LIMITS).questions["other_id"].sha256
        == doc.questions["late"].sha256
    )
    assert spec.state_sha256({"b": 1, "a": 2}) == spec.state_sha256({"a": 2, "b": 1})


def test_score_level_order_is_meaning_and_changes_the_hash():
    a = spec.parse(
        {"s": {"type": "score", "criteria": ["low", "high"]}}, limits=spec.DEFAULT_LIMITS
    )
    b = spec.parse(
        {"s": {"type": "score", "criteria": ["high", "low"]}}, limits=spec.DEFAULT_LIMITS
    )
    assert a.sha256 != b.sha256


def test_document_keeps_declared_option_order():
    criteria = {"zeta": "last letter", "alpha": "first letter", "other": "else"}
    doc = spec.parse({"c": {"type": "choice", "criteria": criteria}}, limits=spec.DEFAULT_LIMITS)
    assert doc.questions["c"].option_names == ["zeta", "alpha", "other"]


# --- JSON text ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "{", "NaN", '{"a": Infinity}', "[1,]", b"\xff\xfe"])
def test_loads_refuses_what_is_not_json(text):
    with pytest.raises(spec.JSONTextError):
        spec.loads(text)


def test_loads_refuses_too_deep_nesting_with_a_clear_error():
    with pytest.raises(spec.JSONTextError):
        spec.loads("[" * 100_000 + "]" * 100_000)


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError):
        spec.canonical_json(float("nan"))


def test_parse_raises_with_every_error():
    with pytest.raises(spec.InvalidDocument) as caught:
        spec.parse({"a": choice(1), "b": score(1)}, limits=spec.DEFAULT_LIMITS)
    assert [e.code for e in caught.value.errors] == ["too_few_options", "too_few_levels"]


def test_issues_serialise_with_all_their_fields():
    result = check.validate({"intent": choice(256)}, limits=spec.DEFAULT_LIMITS)
    assert result.as_dict()["errors"] == [
        {
            "path": "questions.intent.criteria",
            "code": "too_many_options",
            "message": "choice `intent` has 256 options; at most 255",
            "question": "intent",
            "limit": 255,
            "actual": 256,
            "loc": ["questions", "intent", "criteria"],
        }
    ]
    assert result.as_dict()["valid"] is False


# --- limits from the environment ---------------------------------------------------------------


def test_limits_from_the_environment():
    limits = spec.Limits.from_env(
        {"DECISIONS__MAX_QUESTIONS": "8", "DECISIONS__MAX_STATE_BYTES": " 1024 "}
    )
    assert (limits.max_questions, limits.max_state_bytes) == (8, 1024)
    assert spec.Limits.from_env({}) == spec.DEFAULT_LIMITS


@pytest.mark.parametrize("raw", ["0", "-1", "many", "1.5"])
def test_a_bad_limit_names_its_variable(raw):
    with pytest.raises(ValueError, match="DECISIONS__MAX_QUESTIONS"):
        spec.Limits.from_env({"DECISIONS__MAX_QUESTIONS": raw})


def test_loads_accepts_a_utf8_byte_order_mark():
    assert spec.loads(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    assert spec.loads("\ufeff[1]") == [1]
