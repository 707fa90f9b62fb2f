"""Hypothesis strategies shared by the property tests: junk that a browser, a script or an
attacker may send to a form or a query string, and the field names of the real forms."""

from __future__ import annotations

from urllib.parse import quote_plus

from hypothesis import strategies as st

from questions.core import spec

#: Field names the console's forms and query strings read (the editor's card `k` and row `r1`).
FIELD_NAMES = (
    "document",
    "state",
    "name",
    "slug",
    "description",
    "tags",
    "note",
    "action",
    "label",
    "version",
    "revoke",
    "base_revision",
    "overwrite_revision",
    "preview_backend",
    "preview_state",
    "preview_state_json",
    "preview_model",
    "backend",
    "concurrency",
    "threshold",
    "tag",
    "card",
    "op",
    "type",
    "q",
    "q-k-id",
    "q-k-type",
    "q-k-instructions_mode",
    "q-k-instructions",
    "q-k-instructions_orig",
    "q-k-noul_mode",
    "q-k-r",
    "q-k-r-r1-name",
    "q-k-r-r1-shape",
    "q-k-r-r1-what",
    "q-k-r-r1-not_for",
    "q-k-r-r1-examples",
    "q-k-r-r1-orig",
    "q-k-r-t-orig",
    "q-k-r-t-shape",
    "expected-q0",
    "expected-q1",
    "col",
    "filter",
    "format",
    "a",
    "b",
    "against",
)

DEEP = 100_000

#: Values that broke (or nearly broke) a view once: overflowing numbers, lone surrogates as JSON
#: escapes and as raw characters, NUL, duplicate keys, deep nesting, non-ASCII digits, values
#: one past a column's length, unknown backends and ids.
SPECIAL_VALUES = (
    "",
    " ",
    "0",
    "1",
    "3",
    "-1",
    "1.0",
    "abc",
    "\x00",
    "production\x00",
    "a\x00b",
    "1e400",
    "-1e400",
    "[1e400]",
    '{"a": 1e400}',
    "1" * 400,
    "9" * 5000,
    '"\\ud800"',
    '{"\\udfff": 1}',
    '["x\\udc00y"]',
    '"\\u0000"',
    "\ud800",
    "x\udc00y",
    '"\ud800"',
    '{"a":1,"a":2}',
    "[" * DEEP + "]" * DEEP,
    "[" * DEEP,
    '{"a":' * 5000 + "1" + "}" * 5000,
    "NaN",
    "Infinity",
    "null",
    "true",
    "{}",
    "[]",
    "{bad",
    "²",
    "١",
    "١٢",
    "𝟙",
    "½",
    "x" * 37,
    "x" * 65,
    "x" * 101,
    "x" * 129,
    "x" * 201,
    "zzz",
    "recorded",
    "v1:zzz",
    "v3:recorded",
    "run:abc",
    "run:99999999999999999999",
    "v99999999999999999999:recorded",
    "approve",
    "request_changes",
    "comment",
    "duplicate",
    "production",
    "staging",
    "choice",
    "score",
    "noul",
    "json",
    "text",
    "object",
    "absent",
    "described",
    "empty",
    "k",
    "r1",
    "t",
    "all",
    "changes",
    "csv",
    "json",
    "café",
    "cafe\u0301",
    "\u202e",
    "\ufeff{}",
)

_characters = (
    st.characters()
    | st.characters(categories=["Cs"])  # lone surrogates
    | st.sampled_from('\x00\ufeff\u202e²١{}[]":,\\')
)
random_text = st.text(_characters, max_size=24)

#: JSON text with a piece of junk inside, in the shapes the console reads.
_inner = st.sampled_from(SPECIAL_VALUES[:30]) | random_text.map(lambda s: f'"{s}"')
json_with_junk = st.one_of(
    _inner.map(lambda v: f'{{"x": {{"type": "choice", "instructions": {v}}}}}'),
    _inner.map(
        lambda v: (
            f'{{"questions": {{"x": {{"type": "noul", "instructions": "So?"}}}}, "state": {v}}}'
        )
    ),
    _inner.map(lambda v: f'{{"x": {{"type": "choice", "criteria": {{"a": {v}, "b": ""}}}}}}'),
    _inner.map(lambda v: f'{{"k": {v}}}'),
)

junk = st.one_of(st.sampled_from(SPECIAL_VALUES), random_text, json_with_junk)

field_names = st.sampled_from(FIELD_NAMES) | st.text(_characters, max_size=8)

#: A form body: field → one or two values.
form_fields = st.dictionaries(field_names, st.lists(junk, min_size=1, max_size=2), max_size=6)


def fields_for(names: tuple[str, ...]) -> st.SearchStrategy[dict[str, list[str]]]:
    """A form body that mostly sets the fields an endpoint reads (`names`), sometimes others."""
    if not names:
        return form_fields
    chosen = st.sampled_from(names) | field_names
    return st.dictionaries(chosen, st.lists(junk, min_size=1, max_size=2), max_size=5)


def urlencode(fields: dict[str, list[str]]) -> bytes:
    """URL-encode a form as a browser might, except that lone surrogates go out as the bytes
    UTF-8 would give them (which is not valid UTF-8): the Django test client refuses to encode
    them itself."""
    pairs = []
    for name, values in fields.items():
        for value in values:
            pairs.append(f"{_quote(name)}={_quote(value)}")
    return "&".join(pairs).encode("ascii")


def _quote(text: str) -> str:
    return quote_plus(text.encode("utf-8", "surrogatepass"))


# --- question set documents --------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_containers = st.lists(json_values, max_size=3) | st.dictionaries(
    st.text(max_size=8), json_values, max_size=3
)

names = st.text(min_size=1, max_size=128).filter(lambda s: s.strip())
#: every entry form the provider's schema takes: null, a string, the documented object, and any
#: other structured description (an object with other keys, an array, nested)
entries = (
    st.none()
    | st.text(max_size=40)
    | st.fixed_dictionaries(
        {},
        optional={
            "what": st.text(max_size=40),
            "not_for": st.text(max_size=40),
            "examples": st.lists(st.text(max_size=20), max_size=3),
        },
    )
    | json_containers
)
instructions = (
    st.just(spec.ABSENT)
    | st.none()
    | st.text(max_size=60)
    | st.dictionaries(st.text(max_size=8), json_values, max_size=3)
    | st.lists(json_values, max_size=3)
)
noul_criteria = (
    st.just(spec.ABSENT)
    | st.none()
    | st.just({})
    | st.fixed_dictionaries({}, optional={"true": entries, "false": entries})
)


def question(qtype: str, criteria, instructions=instructions) -> st.SearchStrategy:
    def build(instr, crit):
        q = {"type": qtype}
        if instr is not spec.ABSENT:
            q["instructions"] = instr
        if crit is not spec.ABSENT:
            q["criteria"] = crit
        return q

    return st.builds(build, instructions, criteria)


def _judgeable(q: dict) -> bool:
    cases = q.get("criteria")
    cases = cases.values() if isinstance(cases, dict) else ()
    return bool(spec.entry_text(q.get("instructions"))) or any(spec.entry_text(c) for c in cases)


questions = (
    question("choice", st.dictionaries(names, entries, min_size=2, max_size=6))
    | question("score", st.lists(entries, min_size=2, max_size=10))
    # a noul with nothing to judge is an error of its own (tests/test_spec.py)
    | question("noul", noul_criteria, instructions | st.text(min_size=1, max_size=60)).filter(
        _judgeable
    )
)
question_maps = st.dictionaries(names, questions, min_size=1, max_size=5)


def wrap(form: str, qmap: dict, state, model: str) -> dict:
    if form == "bare":
        return qmap
    if form == "decisions":
        return {"state": state, "questions": qmap}
    if form == "provider":
        return {"state": state, "model": model, "questions": qmap}
    return {
        "format": spec.EXPORT_FORMAT,
        "question_set": "s",
        "version": 1,
        "status": "approved",
        "sha256": spec.questions_sha256(qmap),
        "questions": qmap,
    }


documents = st.builds(
    wrap,
    st.sampled_from(["bare", "decisions", "provider", "export"]),
    question_maps,
    json_values,
    names,
)
