"""Production states as the application sends them (pure Python, no Django): the body of one
request read into records, and the sampling rule.

A request is one JSON object, or NDJSON (one object a line), each object a record:
`{"state": {...}, "answers": {...}, "version": N, "label": L, "at": "<ISO time>"}`,
only `state` required. `read` refuses the first thing wrong — naming the line, never quoting a
state — with the status a request answers: 413 over the limits, 400 what is not JSON (or not
UTF-8, or holds nothing), 422 a record or state that is not a JSON object, or a field of the
wrong kind. All or nothing: one bad line refuses the request.

Sampling keeps 1 state in N by the state's own content: the first 16 hex digits of the SHA-256
of its canonical JSON as the application sent it (`spec.sha256_of`), read as a number, modulo
N, is 0 — so the same state is always kept or always left out, whoever sends it and however
often.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from questions.core import spec

#: the source of a state the application sent (`SampleState.Source`), and the word its
#: answers are said with ("production v3 said other")
SOURCE: Final = "production"
NDJSON: Final = "application/x-ndjson"
JSON: Final = "application/json"
MEDIA_TYPES: Final = (JSON, NDJSON)
FIELDS: Final = ("state", "answers", "version", "label", "at")
#: how deep a record (its state, its answers) may nest objects and arrays (redaction walks it)
MAX_DEPTH: Final = 100
#: the longest question id and label a record may name (the models' limits)
ID_LIMIT: Final = 128
LABEL_LIMIT: Final = 36


class BodyError(ValueError):
    """The request cannot be taken: `status` is what it answers; the message names the line."""

    def __init__(self, status: int, message: str, *, code: str):
        super().__init__(message)
        self.status, self.code = status, code


def _not_json(where: str, exc: Exception) -> BodyError:
    """What a line that is not JSON gets: where the parser stopped and why, never what it read
    (the parser's own words quote a number or a string in some cases; those are said here
    without it)."""
    cause, text = exc.__cause__, str(exc)
    if isinstance(cause, json.JSONDecodeError):
        said = f"{cause.msg} at column {cause.colno}"
    elif "not valid Unicode" in text:
        said = "it is not UTF-8 text"
    elif "overflows" in text:
        said = "a number in it overflows to infinity"
    elif "surrogate" in text:
        said = "a string in it holds half of a surrogate pair, which is not a character"
    elif "nested too deeply" in text or "is not a JSON value" in text:
        said = text
    else:
        said = "it cannot be read"
    return BodyError(400, f"{where} is not JSON: {said}.", code="not_json")


@dataclass(frozen=True)
class Record:
    """One state as production sent it, with what it answered and when."""

    line: int
    state: dict[str, Any]
    answers: dict[str, Any]
    version: int | None
    label: str
    at: datetime | None

    def kept(self, keep_one_in: int) -> bool:
        """Whether sampling 1 in `keep_one_in` keeps this state (see the module's docstring)."""
        return keep_one_in <= 1 or sampled_in(spec.sha256_of(self.state), keep_one_in)


def sampled_in(state_sha256: str, keep_one_in: int) -> bool:
    """The sampling rule on a state's hash (hex SHA-256 of its canonical JSON)."""
    return int(state_sha256[:16], 16) % keep_one_in == 0


def media_type(content_type: str) -> str | None:
    """`application/json` or `application/x-ndjson` as a Content-Type header names it (its
    parameters, such as a charset, aside), or None for anything else."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind if kind in MEDIA_TYPES else None


def read(
    body: bytes,
    *,
    ndjson: bool,
    max_lines: int,
    max_bytes: int,
    max_state_bytes: int,
) -> list[Record]:
    """The records of a request's body, or `BodyError` for the first thing wrong."""
    if len(body) > max_bytes:
        raise BodyError(
            413,
            f"The request holds {len(body):,} bytes; at most {max_bytes:,} a request. Send "
            "fewer lines a request.",
            code="too_large",
        )
    if not ndjson:
        if not body.strip():
            raise BodyError(400, "The request holds no state.", code="empty")
        try:
            value = spec.loads(body)
        except spec.JSONTextError as exc:
            raise _not_json("The body", exc) from None
        return [_record(value, 1, "The body", max_state_bytes)]
    lines = body.split(b"\n")
    sent = sum(1 for raw in lines if raw.strip())
    if sent > max_lines:
        raise BodyError(
            413,
            f"The request holds {sent:,} lines; at most {max_lines:,} a request. Send them in "
            "several requests.",
            code="too_many_lines",
        )
    records = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"Line {number}"
        try:
            value = spec.loads(raw)
        except spec.JSONTextError as exc:
            raise _not_json(where, exc) from None
        records.append(_record(value, number, where, max_state_bytes))
    if not records:
        raise BodyError(
            400, "The request holds no state (no line that is not blank).", code="empty"
        )
    return records


def _refuse(where: str, message: str, code: str = "not_a_record") -> BodyError:
    return BodyError(422, f"{where}: {message}", code=code)


def _record(value: Any, line: int, where: str, max_state_bytes: int) -> Record:
    if not isinstance(value, dict):
        raise _refuse(
            where,
            f'a record is a JSON object {{"state": {{…}}, …}}, not {spec.describe(value)}.',
        )
    unknown = sorted(k for k in value if k not in FIELDS)
    if unknown:
        raise _refuse(
            where,
            f"unknown key {json.dumps(unknown[0][:40])}; a record has {', '.join(FIELDS)} "
            "(only state is required).",
        )
    if "state" not in value:
        raise _refuse(where, 'no state; a record is {"state": {…}} at least.')
    if _depth(value) > MAX_DEPTH:
        raise _refuse(
            where,
            f"the record nests objects and arrays more than {MAX_DEPTH} deep.",
            code="too_deep",
        )
    state = value["state"]
    if not isinstance(state, dict):
        raise _refuse(
            where,
            f"the state is {spec.describe(state)}, not a JSON object.",
            code="state_not_an_object",
        )
    size = len(spec.canonical_json(state))
    if size > max_state_bytes:
        raise _refuse(
            where,
            f"the state is {size:,} bytes; at most {max_state_bytes:,} "
            "(DECISIONS__MAX_STATE_BYTES).",
            code="state_too_large",
        )
    return Record(
        line=line,
        state=state,
        answers=_answers(value.get("answers"), where),
        version=_version(value.get("version"), where),
        label=_label(value.get("label"), where),
        at=_at(value.get("at"), where),
    )


def _depth(value: Any) -> int:
    """How deep `value` nests objects and arrays (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:  # past it, how much deeper is not asked
                stack.extend(
                    (v, depth + 1) for v in (node.values() if isinstance(node, dict) else node)
                )
    return deepest


def _unit(value: Any) -> bool:
    return spec_number(value) and 0 <= value <= 1


def spec_number(value: Any) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _answers(value: Any, where: str) -> dict[str, Any]:
    """Production's answers, per question id, in the runtime's answer shape (checked where it
    is one: `choice` a name, `probabilities` an object of numbers from 0 to 1, `confidence` and
    `noul` from 0 to 1, `score` a number; other fields pass, as the runtime passes them)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _refuse(where, f"answers is {spec.describe(value)}, not an object of answers.")
    for qid, answer in value.items():
        shown = json.dumps(qid[:40])
        if len(qid) > ID_LIMIT or "\x00" in qid:
            raise _refuse(
                where, f"the question id {shown} is no id (at most {ID_LIMIT} characters)."
            )
        if not isinstance(answer, dict):
            raise _refuse(
                where, f"the answer to {shown} is {spec.describe(answer)}, not an object."
            )
        if "choice" in answer and not isinstance(answer["choice"], str):
            raise _refuse(where, f"the answer to {shown} has a choice that is not a name.")
        probabilities = answer.get("probabilities", {})
        if not isinstance(probabilities, dict) or not all(_unit(p) for p in probabilities.values()):
            raise _refuse(
                where, f"the answer to {shown} has probabilities that are not numbers from 0 to 1."
            )
        for name in ("confidence", "noul"):
            if name in answer and not _unit(answer[name]):
                raise _refuse(where, f"the answer to {shown} has a {name} that is not from 0 to 1.")
        if "score" in answer and not spec_number(answer["score"]):
            raise _refuse(where, f"the answer to {shown} has a score that is not a number.")
    return value


def _version(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**31:
        raise _refuse(
            where, "version is the number of the set's version production asked (1, 2, …)."
        )
    return value


def _label(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > LABEL_LIMIT or "\x00" in value:
        raise _refuse(
            where,
            "label is the name of the label production fetched (at most "
            f"{LABEL_LIMIT} characters).",
        )
    return value


def _at(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    problem = f"at is an ISO 8601 time (2025-01-31T12:00:00Z), not {spec.describe(value)}."
    if not isinstance(value, str) or len(value) > 40:
        raise _refuse(where, problem)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _refuse(where, problem) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
