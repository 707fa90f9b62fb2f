"""The `.jevl` record format (jevkit-core's record format v1), in pure Python.

One record is one line of JSON:

    {"v": 1, "id": "sha256:…", "ts": "2026-12-01T21:35:06Z", "model": "jev-1.13",
     "request": {"state": …, "questions": {…}}, "answers": {…}, "usage": {…}?,
     "label": {question id: expected answer}?, "tags": […]?, "meta": {…}?}

`id` is `sha256:` + the hex SHA-256 of the canonical JSON of {"model", "questions", "state"}
(`record_id`): the same sorted-key, compact UTF-8 form as `spec.canonical_json`, so it equals
jevkit-core's `record_id`. `record_line` writes a line from what a recording holds (the exact
request text it sent; `state` and `questions` are taken from it in the order they went out);
`read_line` reads and checks one line — strict JSON, `v` 1, the id, the questions by the
question-set contract, the answers by the typesafe wire's rules — and says what is wrong with
its line number. A record's `meta.model_asked`, when it has one, is the model the application
asked (the console writes it: the alias `model` answered for). Nothing here touches Django or
a database.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from questions.core import answers, spec

FORMAT_VERSION: Final = 1
#: the media type a download is served as, and the file suffix
MEDIA_TYPE: Final = "application/x-ndjson"
SUFFIX: Final = ".jevl"

_REQUIRED: Final = ("v", "id", "ts", "model", "request", "answers")
_KNOWN: Final = frozenset(_REQUIRED) | {"usage", "label", "tags", "meta"}
#: what the console adds to a checked answer; worked out again when a record is read
DERIVED_ANSWER_KEYS: Final = ("flags",)


class RecordError(ValueError):
    """A line that is not a record the console can keep: `line` (1-based) and why."""

    def __init__(self, line: int, message: str):
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


def record_id(model: str, state: Any, questions: Mapping[str, Any]) -> str:
    """The record's `id`: the digest of model, state and questions."""
    canonical = spec.canonical_json({"model": model, "questions": questions, "state": state})
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def timestamp(moment: datetime) -> str:
    """`ts`: the moment in UTC, ISO 8601 to the second with a `Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def request_parts(request_text: str) -> tuple[Any, dict[str, Any]] | None:
    """(state, questions) of a request body as it was sent, keys in the order they went out;
    None when the body carries no `state` and `questions` (the `llm` wire sends a chat prompt)."""
    try:
        body = spec.loads(request_text)
    except spec.JSONTextError:
        return None
    if not isinstance(body, dict) or "state" not in body:
        return None
    questions = body.get("questions")
    if not isinstance(questions, dict):
        return None
    return body["state"], questions


def record_line(
    *,
    request_text: str,
    model: str,
    answers: Mapping[str, Any],
    ts: datetime,
    usage: Mapping[str, Any] | None = None,
    expected: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
    response_text: str = "",
) -> str | None:
    """One `.jevl` line (ending in a newline) for a recorded decision, or None when its request
    holds no questions map (`request_parts`). `answers` are the checked ones, their keys in the
    order of the raw `response_text` (`as_answered`); `usage` too. `label` holds the
    expected answers of the questions answered, where there are any."""
    parts = request_parts(request_text)
    if parts is None:
        return None
    state, questions = parts
    record: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "id": record_id(model, state, questions),
        "ts": timestamp(ts),
        "model": model,
        "request": {"state": state, "questions": questions},
        "answers": as_answered(response_text, "answers", dict(answers)),
    }
    if usage is not None:
        record["usage"] = as_answered(response_text, "usage", dict(usage))
    label = {qid: expected[qid] for qid in answers if expected and qid in expected}
    if label:
        record["label"] = label
    if meta:
        record["meta"] = dict(meta)
    return spec.wire_json(record).decode("utf-8") + "\n"


def _ordered_like(value: Any, model: Any) -> Any:
    """`value` with every object's keys in the order `model` (the same value as it arrived) has
    them, then any others: a database's JSON column may sort keys (PostgreSQL's jsonb does)."""
    if isinstance(value, dict):
        order = list(model) if isinstance(model, dict) else []
        keys = [k for k in order if k in value] + [k for k in value if k not in order]
        inner = model if isinstance(model, dict) else {}
        return {k: _ordered_like(value[k], inner.get(k)) for k in keys}
    if isinstance(value, list) and isinstance(model, list) and len(model) == len(value):
        return [_ordered_like(v, m) for v, m in zip(value, model, strict=True)]
    return value


def as_answered(response_text: str, key: str, value: Any) -> Any:
    """A checked part of a response (`answers`, `usage`) with its keys in the order the
    provider's raw `response_text` gave them; as it is when the response is not a native one."""
    try:
        body = spec.loads(response_text) if response_text else None
    except spec.JSONTextError:
        body = None
    return _ordered_like(value, body.get(key) if isinstance(body, dict) else None)


@dataclass
class Record:
    """A line read and checked (`read_line`)."""

    line: int
    id: str
    ts: datetime
    model: str
    state: Any
    questions: dict[str, Any]  # as written, in its order
    parsed: dict[str, spec.Question]
    checked: answers.CheckedDecision
    usage: dict[str, Any] | None = None
    label: dict[str, Any] = field(default_factory=dict)
    #: the model the application asked (`meta.model_asked`, as the console writes it: an alias
    #: like `jev-latest` that `model` answered for); `model` when the record names none
    model_asked: str = ""

    @property
    def questions_sha256(self) -> str:
        """The canonical questions hash: a version's `sha256` when it holds these questions."""
        return spec.questions_sha256(self.questions)

    @property
    def state_sha256(self) -> str:
        return spec.state_sha256(self.state)

    @property
    def request_body(self) -> dict[str, Any]:
        """The body the typesafe wire sent for this request (`Wire.body`'s keys and order),
        asking the model asked."""
        return {"state": self.state, "model": self.model_asked, "questions": self.questions}

    @property
    def response_body(self) -> dict[str, Any]:
        return {"model": self.model, "answers": self.checked.answers, "usage": self.usage}


def _repeated(obj: Any, line: int, where: str) -> None:
    repeated = getattr(obj, "repeated", ())
    if repeated:
        raise RecordError(line, f"{where} holds the key {repeated[0]!r} more than once")


def _object(raw: Mapping[str, Any], key: str, line: int, *, optional: bool) -> Any:
    value = raw.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise RecordError(line, f"`{key}` must be an object; got {spec.describe(value)}")
    _repeated(value, line, f"`{key}`")
    return value


def _model_name(value: Any, line: int, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RecordError(line, f"{where} must be the name of the model {what}")
    if "\x00" in value or len(value) > 200:
        raise RecordError(line, f"{where} is not a model name (at most 200 characters, no NUL)")
    return value


def _moment(value: Any, line: int) -> datetime:
    if not isinstance(value, str):
        raise RecordError(line, f"`ts` must be a string; got {spec.describe(value)}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise RecordError(line, "`ts` is not an ISO 8601 time (2026-12-01T21:35:06Z)") from None
    if moment.tzinfo is None:
        raise RecordError(line, "`ts` names no time zone (end it in Z for UTC)")
    return moment


def read_line(
    text: str | bytes,
    line: int,
    *,
    limits: spec.Limits,
    price_per_million: float | None = None,
) -> Record:
    """Read one line of a `.jevl` file and check it, or `RecordError` naming the line.
    `text` must not be blank (a reader skips blank lines)."""
    try:
        raw = spec.loads(text)
    except spec.JSONTextError as exc:
        raise RecordError(line, f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise RecordError(line, f"a record is a JSON object; got {spec.describe(raw)}")
    _repeated(raw, line, "the record")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise RecordError(line, f"missing {', '.join(f'`{k}`' for k in missing)}")
    version = raw["v"]
    if type(version) is not int or version != FORMAT_VERSION:
        shown = str(version) if isinstance(version, int) else spec.describe(version)
        raise RecordError(line, f"`v` is {shown}; this console reads record format v1")
    model = _model_name(raw["model"], line, "`model`", "that answered")
    request = _object(raw, "request", line, optional=False)
    if "questions" not in request or "state" not in request:
        raise RecordError(line, "`request` must hold `state` and `questions`")
    state, questions = request["state"], request["questions"]
    validation = spec.validate({"state": state, "questions": questions}, limits=limits, lints=False)
    if validation.errors or validation.document is None:
        shown = "; ".join(f"{e.path}: {e.message}" for e in validation.errors[:3])
        raise RecordError(line, f"the request is not one to ask: {shown}")
    parsed = validation.document.questions
    expected_id = record_id(model, state, questions)
    if raw["id"] != expected_id:
        raise RecordError(
            line, f"`id` is not the record's: its model, state and questions give {expected_id}"
        )
    moment = _moment(raw["ts"], line)
    given = _object(raw, "answers", line, optional=False)
    usage = _object(raw, "usage", line, optional=True)
    label = _object(raw, "label", line, optional=True) or {}
    for key, kind, name in (("tags", list, "an array"), ("meta", dict, "an object")):
        if raw.get(key) is not None and not isinstance(raw[key], kind):
            raise RecordError(line, f"`{key}` must be {name}; got {spec.describe(raw[key])}")
    meta = raw.get("meta") or {}
    asked = meta.get("model_asked")
    if asked is not None:
        asked = _model_name(asked, line, "`meta.model_asked`", "asked")
    body = {
        "model": model,
        "answers": {
            qid: (
                {k: v for k, v in a.items() if k not in DERIVED_ANSWER_KEYS}
                if isinstance(a, dict)
                else a
            )
            for qid, a in given.items()
        },
        "usage": usage,
    }
    try:
        checked = answers.check_response(
            parsed, body, price_per_million=price_per_million, rules=answers.GATEWAY
        )
    except answers.AnswerError as exc:
        shown = "; ".join(message for _, message in exc.problems[:3])
        raise RecordError(line, f"the answers break the typesafe wire's rules: {shown}") from None
    if "\\u0000" in spec.wire_json([checked.answers, usage]).decode("utf-8"):
        raise RecordError(
            line, "the answers or usage hold a NUL character, which no database here stores"
        )
    return Record(
        line=line,
        id=expected_id,
        ts=moment,
        model=model,
        state=state,
        questions=questions,
        parsed=parsed,
        checked=checked,
        usage=checked.usage,
        label=dict(label),
        model_asked=asked or model,
    )
