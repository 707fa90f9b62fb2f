"""The question-set contract, in pure Python.

This module owns what a question set *is*: the three question types, the entry shapes, every
limit, the four document forms a set arrives in, the lints of the encoding rules, and the
canonical form whose SHA-256 identifies a document, a question and a state. Nothing here imports
Django: the editor, the importer, the CLI, the backends and the export all call these functions.

`validate()` never raises on any JSON value; it returns every error and warning it finds, each
naming its path (`questions.intent.criteria`), the question id, a code, the limit and the actual
value. `parse()` returns a `Document` or raises `InvalidDocument` with those same errors.

Absent and `null` are different values throughout: a question with no `instructions` key and one
with `"instructions": null` parse, serialise and hash differently, and so do absent / `null` /
`{}` / populated noul criteria, and "no state" versus a `null` state.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final

# --- limits -------------------------------------------------------------------------------------

QUESTION_TYPES: Final = ("choice", "score", "noul")
ENTRY_KEYS: Final = ("what", "not_for", "examples")
#: What each key of the documented structured description usually holds (seed 000); any other
#: object or array is a structured description too, forwarded as written (seed 002).
_ENTRY_FIELD_TYPES: Final = {
    "what": (str, "a string"),
    "not_for": (str, "a string"),
    "examples": (list, "an array of strings"),
}
NOUL_CRITERIA_KEYS: Final = ("true", "false")
QUESTION_KEYS: Final = ("type", "instructions", "criteria")

EXPORT_FORMAT: Final = "decision-console/question-set@1"
#: the one status an export document carries: only an approved version is exported (the
#: model's `Version.Status.APPROVED` is this value; the schema's `"const"` says the same)
EXPORT_STATUS: Final = "approved"

#: Rough bytes per token of canonical JSON, for the budget lints only (no tokenizer is shipped).
BYTES_PER_TOKEN: Final = 4
#: A lint fires when the estimate reaches this share of a budget.
BUDGET_WARNING_SHARE: Final = 0.8


@dataclass(frozen=True)
class Limits:
    """Every bound of the contract. The two the deployment may tune come from the environment
    (`Limits.from_env`); the rest are the provider's and fixed."""

    max_questions: int = 32
    max_state_bytes: int = 262_144
    min_options: int = 2
    max_options: int = 255
    min_levels: int = 2
    max_levels: int = 10
    max_name_length: int = 128
    #: provider budgets worth a warning, not an error
    state_and_question_tokens: int = 32_000
    request_tokens: int = 64_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Limits:
        """Read the tunable limits; a value that is not a positive whole number raises
        `ValueError` naming the variable."""
        values = {}
        for name, variable in LIMIT_ENV.items():
            raw = environ.get(variable, "").strip()
            if not raw:
                continue
            try:
                number = int(raw)
            except ValueError:
                number = 0
            if number < 1:
                raise ValueError(f"{variable} must be a positive whole number, not {raw!r}")
            values[name] = number
        return cls(**values)


#: The limits a deployment may tune, and the environment variables that tune them.
LIMIT_ENV: Final = {
    "max_questions": "DECISIONS__MAX_QUESTIONS",
    "max_state_bytes": "DECISIONS__MAX_STATE_BYTES",
}

DEFAULT_LIMITS: Final = Limits()

# --- issues -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issue:
    """One error or warning: where it is, which question, which rule, the limit and the value."""

    path: str
    code: str
    message: str
    question: str | None = None
    limit: Any = None
    actual: Any = None
    #: the same place as `path`, as keys: ("questions", "intent", "criteria", "explicit")
    loc: tuple[str | int, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["loc"] = list(self.loc)
        return out

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.code}]"


class InvalidDocument(ValueError):
    """Raised by `parse()`; carries every error (and the warnings found on the way)."""

    def __init__(self, errors: list[Issue], warnings: list[Issue] | None = None):
        self.errors = errors
        self.warnings = warnings or []
        super().__init__("; ".join(str(e) for e in errors[:3]) + ("; …" if len(errors) > 3 else ""))


# --- JSON text ----------------------------------------------------------------------------------


class JSONTextError(ValueError):
    """The text is not JSON (or uses NaN/Infinity, which JSON does not have)."""


class _Object(dict):
    """A JSON object that remembers the keys its text repeated (the plain dict keeps the last)."""

    repeated: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    repeated = []
    for key, _ in pairs:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    marked = _Object(obj)
    marked.repeated = tuple(repeated)
    return marked


def _no_constant(name: str) -> Any:
    raise JSONTextError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 24 else f"{text[:20]}…"
        raise JSONTextError(f"the number {shown} is too large: it overflows to infinity")
    return value


#: A `\uD800`–`\uDFFF` escape: half of a UTF-16 surrogate pair (a pair decodes to one character).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(value: Any) -> str | None:
    """The first string or key in `value` holding a lone surrogate, or None. Iterative: the
    value may be nested as deeply as the parser allows."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def loads(text: str | bytes) -> Any:
    """Parse JSON text strictly: NaN and Infinity are refused, and so are numbers that overflow
    to infinity and lone surrogates (`"\\ud800"`), which are not characters and which no JSON
    text, database or hash here can hold; a key repeated inside one object is remembered so that
    validation can report it (ids and option names are unique)."""
    if isinstance(text, bytes):
        try:
            text = text.decode(json.detect_encoding(text))
        except UnicodeDecodeError as exc:
            raise JSONTextError(f"the text is not valid Unicode: {exc.reason}") from None
    else:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise JSONTextError(
                f"character {exc.start + 1} is a lone surrogate (U+{ord(text[exc.start]):04X}), "
                "half of a pair and not a character"
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte order mark, as some editors write
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object_pairs,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except JSONTextError:
        raise
    except RecursionError as exc:
        raise JSONTextError("the JSON is nested too deeply") from exc
    except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError included
        raise JSONTextError(str(exc)) from exc
    if _SURROGATE_ESCAPE.search(text):
        bad = _lone_surrogate(value)
        if bad is not None:
            escape = next(f"\\u{ord(c):04x}" for c in bad if 0xD800 <= ord(c) <= 0xDFFF)
            raise JSONTextError(
                f"the string {json.dumps(bad)[:40]} holds {escape} alone: half of a surrogate "
                "pair, not a character"
            )
    return value


# --- canonical form -----------------------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """Canonical JSON: UTF-8, object keys sorted, arrays in order, no
    insignificant whitespace. Raises `ValueError` for values JSON cannot hold."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def wire_json(value: Any) -> bytes:
    """The bytes that go on a wire: UTF-8, no insignificant whitespace, every
    object's keys in the order they have — the author's, never sorted. Canonical JSON is for
    hashing only. Raises `ValueError` for values JSON cannot hold."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def json_object(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A JSON object from its members, each a name and its value already encoded, in the
    order given. With each value's `wire_json` it is the mapping's `wire_json`; with the
    members sorted by name and each value's `canonical_json`, its `canonical_json`: a value
    that many objects share is encoded once."""
    return b"{" + b",".join(wire_json(name) + b":" + value for name, value in members) + b"}"


def canonical_sha256(canonical: bytes) -> str:
    """SHA-256 (hex) of canonical JSON already encoded (`canonical_json`)."""
    return hashlib.sha256(canonical).hexdigest()


def sha256_of(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of any JSON value."""
    return canonical_sha256(canonical_json(value))


def questions_sha256(questions: Mapping[str, Any]) -> str:
    """The hash that identifies a version's content: its canonical questions map."""
    return sha256_of(questions)


def question_sha256(question: Mapping[str, Any]) -> str:
    """The hash of one question's content. The id is not part of it: ids are addressing, never
    content, so the same words under another id hash the same."""
    return sha256_of(question)


def state_sha256(state: Any) -> str:
    """The hash of a state's content; `null` is a value and hashes as such."""
    return sha256_of(state)


# --- the parsed document ------------------------------------------------------------------------


class _Absent:
    """Marks a key that was not there (distinct from a JSON `null`)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return (_Absent, ())


ABSENT: Final = _Absent()


class Form(enum.StrEnum):
    """The shapes a question set arrives in."""

    BARE = "bare"  # the questions map itself
    DECISIONS = "decisions"  # a POST /api/decisions body: state, questions, optional profile
    PROVIDER = "provider"  # a provider request body: state, model, questions
    EXPORT = "export"  # the console's export document


WRAPPER_KEYS: Final = {
    Form.DECISIONS: ("state", "questions", "profile"),
    Form.PROVIDER: ("state", "model", "questions"),
    Form.EXPORT: (
        "format",
        "question_set",
        "version",
        "status",
        "sha256",
        "model",
        "answered_by",
        "approved_by",
        "approved_at",
        "questions",
        "advice",
    ),
}

#: Advisory thresholds (seed 000: thresholds belong to the application, so these are advice):
#: the one field each question type may carry in an `advice` object beside `questions`.
ADVICE_FIELDS: Final = {"noul": "threshold", "choice": "min_confidence"}


@dataclass(frozen=True)
class Question:
    """One typed question. `instructions` and `criteria` keep `ABSENT` apart from `None`;
    `keys` remembers the order the source document gave its keys in (not part of equality)."""

    id: str
    type: str
    instructions: Any = ABSENT
    criteria: Any = ABSENT
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The question as it goes on the wire: keys that were absent stay absent, and the keys
        that are there come in the source document's order."""
        fields = {"type": self.type, "instructions": self.instructions, "criteria": self.criteria}
        order = [*self.keys, *(k for k in QUESTION_KEYS if k not in self.keys)]
        return {k: fields[k] for k in order if k in fields and fields[k] is not ABSENT}

    @functools.cached_property
    def sha256(self) -> str:
        """Worked out once per question (a batch run records it with every answer)."""
        return question_sha256(self.to_json())

    @property
    def option_names(self) -> list[str]:
        """A choice's declared options in declared order."""
        return list(self.criteria) if self.type == "choice" else []

    @property
    def level_count(self) -> int:
        return len(self.criteria) if self.type == "score" else 0


@dataclass(frozen=True)
class Document:
    """A valid question set, with whatever wrapped it."""

    form: Form
    questions: dict[str, Question]
    state: Any = ABSENT
    meta: dict[str, Any] = field(default_factory=dict)  # model, profile, export fields

    def questions_json(self) -> dict[str, Any]:
        """The runtime's `questions` map, unchanged, in declared order."""
        return {qid: q.to_json() for qid, q in self.questions.items()}

    def to_json(self) -> Any:
        """The document in the form it arrived in."""
        if self.form is Form.BARE:
            return self.questions_json()
        out = dict(self.meta)
        if self.state is not ABSENT:
            out["state"] = self.state
        out["questions"] = self.questions_json()
        return out

    @property
    def sha256(self) -> str:
        return questions_sha256(self.questions_json())

    @property
    def state_sha256(self) -> str | None:
        """None when there is no state; a `null` state has a hash like any other value."""
        return None if self.state is ABSENT else state_sha256(self.state)


@dataclass
class Validation:
    """What `validate()` found. `document` is set only when there are no errors."""

    errors: list[Issue]
    warnings: list[Issue]
    document: Document | None = None
    form: Form | None = None

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def sha256(self) -> str | None:
        return self.document.sha256 if self.document else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "errors": [e.as_dict() for e in self.errors],
            "warnings": [w.as_dict() for w in self.warnings],
            "sha256": self.sha256,
        }


# --- validation ---------------------------------------------------------------------------------


def describe(value: Any) -> str:
    """A JSON type name for messages; never the value itself (it may be a user's state)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


Loc = tuple[str | int, ...]


def _key_path(base: Loc, key: str | int) -> Loc:
    return (*base, key)


_PLAIN_KEY = re.compile(r"[\w-]+")


def path_of(loc: Loc) -> str:
    """`questions.intent.criteria` from its keys; `$` is the document itself. A key that is
    empty or holds anything but letters, digits, `_` and `-` is shown quoted: `criteria[""]`."""
    if not loc:
        return "$"
    parts = []
    for key in loc:
        text = str(key)
        if isinstance(key, int) or _PLAIN_KEY.fullmatch(text):
            parts.append(("." if parts else "") + text)
        else:
            parts.append(f"[{json.dumps(text, ensure_ascii=False)}]")
    return "".join(parts)


#: an id longer than this is shown by its first characters in messages
SHOWN_ID = 32


def shown_id(name: str) -> str:
    """A question id or option name as a message shows it: an over-long one cut short."""
    return name if len(name) <= SHOWN_ID else f"{name[:SHOWN_ID]}…"


def shown_path(loc: Loc) -> str:
    """`path_of` as a message shows it: every over-long key cut short (`shown_id`), so a
    200-character option name is not written out in full in front of its own error."""
    return path_of(tuple(k if isinstance(k, int) else shown_id(str(k)) for k in loc))


def _shorter_ids(message: str, question: str | None) -> str:
    """A message that quotes an over-long question id quotes its first characters only (the
    error about its length says how long it is)."""
    if question and len(question) > SHOWN_ID:
        return message.replace(f"`{question}`", f"`{shown_id(question)}`")
    return message


def _objects_within(value: Any, path: Loc) -> Iterator[tuple[dict, Loc]]:
    """Every object inside a JSON value (itself included) with where it is; iterative, as a
    state or a structured description may nest as deeply as the parser allows."""
    stack: list[tuple[Any, Loc]] = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            yield item, at
            stack.extend((v, (*at, k)) for k, v in item.items() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, (*at, i)) for i, v in enumerate(item) if isinstance(v, dict | list))


class _Checker:
    """One validation pass. Collects issues; never raises on JSON input."""

    def __init__(self, limits: Limits, lints: bool):
        self.limits = limits
        self.lints = lints
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []

    def error(self, loc, code, message, question=None, limit=None, actual=None) -> None:
        message = _shorter_ids(message, question)
        self.errors.append(Issue(path_of(loc), code, message, question, limit, actual, loc))

    def warn(self, loc, code, message, question=None, limit=None, actual=None) -> None:
        if self.lints:
            message = _shorter_ids(message, question)
            self.warnings.append(Issue(path_of(loc), code, message, question, limit, actual, loc))

    # names (question ids, option names) ------------------------------------------------------

    def name(self, name: str, path: Loc, what: str, question: str | None) -> bool:
        limit = self.limits.max_name_length
        where = f"choice `{question}`: " if what == "option name" else ""
        if not name.strip():
            self.error(path, f"blank_{what.replace(' ', '_')}", f"{where}{what} is blank", question)
            return False
        if len(name) > limit:
            self.error(
                path,
                f"{what.replace(' ', '_')}_too_long",
                f"{where}{what} `{name[:32]}…` has {len(name)} characters; at most {limit}",
                question,
                limit,
                len(name),
            )
            return False
        return True

    def repeated_keys(self, obj: dict, path: Loc, what: str, question: str | None) -> None:
        for key in getattr(obj, "repeated", ()):
            self.error(
                _key_path(path, key),
                f"duplicate_{what.replace(' ', '_')}",
                f"{what} `{key}` appears more than once",
                key if what == "question id" else question,
            )

    # entries ---------------------------------------------------------------------------------

    def entry(self, value: Any, path: Loc, qid: str, label: str) -> None:
        """`null`, a string, or a structured description — an object or an array (seed 002:
        "supplied descriptions accept strings, objects and arrays"), kept and forwarded as
        written. The documented object `{"what", "not_for", "examples"}` is one such form; a
        documented key holding something else is worth a word, never a refusal."""
        if value is None or isinstance(value, str):
            return
        if not isinstance(value, dict | list):
            self.error(
                path,
                "invalid_entry",
                f"{label} must be null, a string, an object or an array; got {describe(value)}",
                qid,
            )
            return
        self.repeated_entry_keys(value, path, qid)
        if isinstance(value, list):
            return
        for key, item in value.items():
            if key not in _ENTRY_FIELD_TYPES or is_documented_entry({key: item}):
                continue
            self.warn(
                _key_path(path, key),
                "unusual_entry_field",
                f"{label}: `{key}` is usually {_ENTRY_FIELD_TYPES[key][1]}; got {describe(item)} "
                "(it is sent as written)",
                qid,
            )

    def repeated_entry_keys(self, value: Any, path: Loc, qid: str) -> None:
        """A key repeated in one object of a structured description: JSON keeps only its last
        value, so the description would say less than its text."""
        for obj, at in _objects_within(value, path):
            self.repeated_keys(obj, at, "entry key", qid)

    # questions -------------------------------------------------------------------------------

    def questions(self, value: Any, path: Loc) -> dict[str, Question] | None:
        if not isinstance(value, dict):
            self.error(
                path,
                "questions_not_object",
                f"the questions must be an object mapping ids to questions; got {describe(value)}",
            )
            return None
        self.repeated_keys(value, path, "question id", None)
        count, lo, hi = len(value), 1, self.limits.max_questions
        if count < lo:
            self.error(
                path, "too_few_questions", "the set has no questions; at least 1", None, lo, 0
            )
        elif count > hi:
            self.error(
                path,
                "too_many_questions",
                f"the set has {count} questions; at most {hi}",
                None,
                hi,
                count,
            )
        parsed: dict[str, Question] = {}
        for qid, question in value.items():
            qpath = _key_path(path, qid)
            ok = self.name(qid, qpath, "question id", qid)
            q = self.question(question, qpath, qid)
            if ok and q is not None:
                parsed[qid] = q
        return parsed

    def question(self, value: Any, path: Loc, qid: str) -> Question | None:
        if not isinstance(value, dict):
            self.error(
                path,
                "question_not_object",
                f"question `{qid}` must be an object with type, instructions and criteria; got "
                f"{describe(value)}",
                qid,
            )
            return None
        start = len(self.errors)
        self.repeated_keys(value, path, "question key", qid)
        for key in value:
            if key not in QUESTION_KEYS:
                self.error(
                    _key_path(path, key),
                    "unknown_question_field",
                    f"question `{qid}` has an unknown key `{key}`; a question has only type, "
                    "instructions and criteria",
                    qid,
                )
        qtype = value.get("type", ABSENT)
        if qtype is ABSENT:
            self.error(
                _key_path(path, "type"),
                "missing_type",
                f"question `{qid}` has no type; one of choice, score, noul",
                qid,
            )
        elif qtype not in QUESTION_TYPES:
            shown = f"`{qtype}`" if isinstance(qtype, str) else describe(qtype)
            self.error(
                _key_path(path, "type"),
                "unknown_type",
                f"question `{qid}` has type {shown}; one of choice, score, noul",
                qid,
                list(QUESTION_TYPES),
                qtype if isinstance(qtype, str) else None,
            )
        instructions = value.get("instructions", ABSENT)
        if not (
            instructions is ABSENT
            or instructions is None
            or isinstance(instructions, str | dict | list)
        ):
            self.error(
                _key_path(path, "instructions"),
                "invalid_instructions",
                f"question `{qid}`: instructions must be a string, an object, an array or null; "
                f"got {describe(instructions)}",
                qid,
            )
        criteria = value.get("criteria", ABSENT)
        cpath = _key_path(path, "criteria")
        before = len(self.errors)
        if qtype == "choice":
            self.choice(criteria, cpath, qid)
        elif qtype == "score":
            self.score(criteria, cpath, qid)
        elif qtype == "noul":
            self.noul(criteria, cpath, qid, instructions)
        if len(self.errors) > before or qtype not in QUESTION_TYPES:
            return None
        if qtype == "noul" and len(self.errors) == start and not _has_words(instructions, criteria):
            self.error(
                path,
                "nothing_to_judge",
                f"noul `{qid}` has nothing to judge: no instructions and no described `true` or "
                "`false` case; give it a statement in its instructions (the provider's SDK "
                "refuses to send it)",
                qid,
            )
            return None
        return Question(qid, qtype, instructions, criteria, keys=tuple(value))

    def choice(self, criteria: Any, path: Loc, qid: str) -> None:
        if not isinstance(criteria, dict):
            got = "none" if criteria is ABSENT else describe(criteria)
            self.error(
                path,
                "invalid_criteria",
                f"choice `{qid}` needs criteria: an object of options (name → description); "
                f"got {got}",
                qid,
            )
            return
        self.repeated_keys(criteria, path, "option name", qid)
        self.count(
            len(criteria),
            path,
            qid,
            "choice",
            "option",
            "options",
            self.limits.min_options,
            self.limits.max_options,
        )
        before = len(self.errors)
        for name, entry in criteria.items():
            opath = _key_path(path, name)
            self.name(name, opath, "option name", qid)
            self.entry(entry, opath, qid, f"option `{name}` of choice `{qid}`")
        if self.lints and len(self.errors) == before:  # lint words, not broken shapes
            names = list(criteria)
            texts = [entry_text(e) for e in criteria.values()]
            self.lint_entries(names, texts, path, qid, "option")
            self.lint_escape(names, texts, path, qid)

    def score(self, criteria: Any, path: Loc, qid: str) -> None:
        if not isinstance(criteria, list):
            got = "none" if criteria is ABSENT else describe(criteria)
            self.error(
                path,
                "invalid_criteria",
                f"score `{qid}` needs criteria: an array of ordered levels; got {got}",
                qid,
            )
            return
        self.count(
            len(criteria),
            path,
            qid,
            "score",
            "level",
            "levels",
            self.limits.min_levels,
            self.limits.max_levels,
        )
        before = len(self.errors)
        for i, entry in enumerate(criteria):
            self.entry(entry, (*path, i), qid, f"level {i} of score `{qid}`")
        if self.lints and len(self.errors) == before:
            texts = [entry_text(e) for e in criteria]
            self.lint_entries(range(len(criteria)), texts, path, qid, "level")

    def noul(self, criteria: Any, path: Loc, qid: str, instructions: Any) -> None:
        if criteria is not ABSENT and criteria is not None:
            if not isinstance(criteria, dict):
                self.error(
                    path,
                    "invalid_criteria",
                    f"noul `{qid}`: criteria must be absent, null or an object with `true` and/or "
                    f"`false`; got {describe(criteria)}",
                    qid,
                )
                return
            else:
                self.repeated_keys(criteria, path, "criteria key", qid)
                for key, entry in criteria.items():
                    kpath = _key_path(path, key)
                    if key not in NOUL_CRITERIA_KEYS:
                        self.error(
                            kpath,
                            "invalid_noul_key",
                            f"noul `{qid}`: criteria key `{key}` is not allowed; only `true` and "
                            "`false`",
                            qid,
                            list(NOUL_CRITERIA_KEYS),
                            key,
                        )
                    else:
                        self.entry(entry, kpath, qid, f"the `{key}` case of noul `{qid}`")
        if isinstance(instructions, str) and joins_two_statements(instructions):
            self.warn(
                (*path[:-1], "instructions"),
                "compound_statement",
                f"noul `{qid}` joins two statements with “and”/“or”; one P(true) cannot say "
                "which part was true — consider two questions",
                qid,
            )

    def count(self, n, path, qid, qtype, singular, plural, lo, hi) -> None:
        if n < lo:
            self.error(
                path,
                f"too_few_{plural}",
                f"{qtype} `{qid}` has {_plural(n, singular)}; at least {lo} {plural}",
                qid,
                lo,
                n,
            )
        elif n > hi:
            self.error(
                path,
                f"too_many_{plural}",
                f"{qtype} `{qid}` has {_plural(n, singular)}; at most {hi}",
                qid,
                hi,
                n,
            )

    # lints (warnings that never repair) ------------------------------------------------------

    def lint_entries(
        self, keys: list[str] | range, texts: list[str], path: Loc, qid: str, kind: str
    ) -> None:
        """Undescribed and duplicate descriptions; `keys` are option names or level indices."""
        seen: dict[str, str | int] = {}
        for key, text in zip(keys, texts, strict=True):
            label = f"{kind} `{key}`" if kind == "option" else f"level {key}"
            norm = _norm(text) if text else ""
            if not norm or (kind == "option" and norm == _norm(key)):
                self.warn(
                    _key_path(path, key),
                    f"undescribed_{kind}",
                    f"{label} of `{qid}` is named only by its id; describe it by its "
                    "consequence, or the model answers it at chance",
                    qid,
                )
                continue
            if norm in seen:
                other = seen[norm]
                other_label = f"`{other}`" if kind == "option" else other
                self.warn(
                    _key_path(path, key),
                    "duplicate_description",
                    f"{label} of `{qid}` has the same description as {kind} {other_label}",
                    qid,
                )
            else:
                seen[norm] = key

    def lint_escape(self, names: list[str], texts: list[str], path: Loc, qid: str) -> None:
        for name in names:
            if _ESCAPE_WORDS.intersection(_WORD_SPLIT.split(name.lower())):
                return
        if any(_ESCAPE_PHRASE.search(text) for text in texts if text):
            return
        self.warn(
            path,
            "no_escape_option",
            f"choice `{qid}` has no escape option (such as `other`, `unclear` or `none`); the "
            "model always picks one of the options",
            qid,
        )

    def lint_budget(self, questions: dict[str, Any], state: Any) -> None:
        try:
            state_bytes = 0 if state is ABSENT else len(canonical_json(state))
            sizes = {qid: len(canonical_json(q)) for qid, q in questions.items()}
        except (ValueError, TypeError, RecursionError):
            self.error(
                ("questions",),
                "invalid_value",
                "the document holds a value JSON text cannot hold (a number that overflows or "
                "a lone surrogate)",
            )
            return
        if not sizes:
            return
        longest = max(sizes, key=sizes.__getitem__)
        for estimate, budget, what, path, qid in (
            (
                (state_bytes + sizes[longest]) // BYTES_PER_TOKEN,
                self.limits.state_and_question_tokens,
                f"the state plus the longest question (`{longest}`)",
                ("questions", longest),
                longest,
            ),
            (
                (state_bytes + sum(sizes.values())) // BYTES_PER_TOKEN,
                self.limits.request_tokens,
                "the whole request",
                ("questions",),
                None,
            ),
        ):
            if estimate >= budget * BUDGET_WARNING_SHARE:
                self.warn(
                    path,
                    "token_budget",
                    f"{what} is about {estimate:,} tokens; the provider's budget is about "
                    f"{budget:,}",
                    qid,
                    budget,
                    estimate,
                )

    # state and wrappers ----------------------------------------------------------------------

    def state(self, wrapper: dict, path: Loc = ("state",)) -> Any:
        if "state" not in wrapper:
            self.error(
                path,
                "missing_state",
                "the body has no state; give any JSON value (null is a value)",
            )
            return ABSENT
        state = wrapper["state"]
        try:
            size = len(canonical_json(state))
        except (ValueError, TypeError, RecursionError):
            self.error(path, "invalid_state", "the state is not a JSON value JSON text can hold")
            return ABSENT
        limit = self.limits.max_state_bytes
        if size > limit:
            self.error(
                path,
                "state_too_large",
                f"the state is {size:,} bytes serialised; at most {limit:,}",
                None,
                limit,
                size,
            )
        self.repeated_state_keys(state, path)
        return state

    def repeated_state_keys(self, state: Any, path: Loc) -> None:
        """A key repeated in one object of the state: JSON keeps only its last value, so the
        state would say less than its text."""
        for obj, at in _objects_within(state, path):
            for key in getattr(obj, "repeated", ()):
                self.error(
                    _key_path(at, key),
                    "duplicate_state_key",
                    f"key `{key}` is repeated in the state; JSON keeps only its last value",
                )

    def nonblank_string(self, wrapper: dict, key: str, code: str, required: bool) -> None:
        if key not in wrapper:
            if required:
                self.error((key,), f"missing_{key}", f"the body has no `{key}`")
            return
        value = wrapper[key]
        if not isinstance(value, str) or not value.strip():
            self.error(
                (key,),
                code,
                f"`{key}` must be a non-blank string; got "
                f"{'a blank string' if isinstance(value, str) else describe(value)}",
            )

    def unknown_keys(self, wrapper: dict, form: Form) -> None:
        allowed = WRAPPER_KEYS[form]
        for key in wrapper:
            if key not in allowed:
                self.warn(
                    (key,),
                    "unknown_field",
                    f"`{key}` is not part of a {form.value} document and is ignored",
                )

    def advice(self, advice: Any, questions: Mapping[str, Question]) -> None:
        """An `advice` object: question ids of the set, each with its type's one field (a noul's
        `threshold`, a choice's `min_confidence`), a number in 0..1."""
        base: Loc = ("advice",)
        if not isinstance(advice, dict):
            self.error(base, "invalid_advice", f"advice must be an object; got {describe(advice)}")
            return
        for qid, entry in advice.items():
            path = _key_path(base, qid)
            question = questions.get(qid)
            if question is None:
                self.error(
                    path,
                    "advice_unknown_question",
                    f"advice for `{qid}`, which is no question of this set",
                    qid,
                )
                continue
            field_name = ADVICE_FIELDS.get(question.type)
            if field_name is None:
                self.error(
                    path,
                    "advice_not_for_type",
                    f"{question.type} `{qid}` takes no advice (a noul takes a threshold, a "
                    "choice a min_confidence)",
                    qid,
                )
                continue
            if not isinstance(entry, dict) or set(entry) != {field_name}:
                self.error(
                    path,
                    "invalid_advice_entry",
                    f'advice for {question.type} `{qid}` is {{"{field_name}": a number in 0..1}}',
                    qid,
                )
                continue
            value = entry[field_name]
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                got = json.dumps(value)[:40] if number else describe(value)
                self.error(
                    _key_path(path, field_name),
                    "advice_out_of_range",
                    f"the {field_name} of `{qid}` must be a number in 0..1; got {got}",
                    qid,
                    "0..1",
                    value if number else None,
                )

    def export_fields(self, doc: dict) -> None:
        fmt = doc.get("format")
        if fmt != EXPORT_FORMAT:
            self.error(
                ("format",),
                "unsupported_format",
                f"format is {json.dumps(fmt)[:80]}; this console reads `{EXPORT_FORMAT}`",
                None,
                EXPORT_FORMAT,
                fmt if isinstance(fmt, str) else None,
            )
        checks: dict[str, tuple[Callable[[Any], bool], str]] = {
            "question_set": (
                lambda v: isinstance(v, str) and bool(v.strip()),
                "a non-blank string",
            ),
            "version": (
                lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                "a whole number from 1",
            ),
            "status": (lambda v: v == EXPORT_STATUS, f"{json.dumps(EXPORT_STATUS)}"),
            "sha256": (
                lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None,
                "64 lowercase hex digits",
            ),
            "model": (_nonblank, "a non-blank string"),
            "answered_by": (
                lambda v: (
                    v is None
                    or _nonblank(v)
                    or (isinstance(v, list) and len(v) > 1 and all(map(_nonblank, v)))
                ),
                "a model name, a list of two or more, or null",
            ),
            "approved_by": (lambda v: v is None or isinstance(v, str), "a string or null"),
            "approved_at": (lambda v: v is None or isinstance(v, str), "a string or null"),
        }
        for key, (ok, expected) in checks.items():
            if key in doc and not ok(doc[key]):
                self.error((key,), f"invalid_{key}", f"`{key}` must be {expected}")


_WORD_SPLIT = re.compile(r"[\W_]+")
_AND = re.compile(r"\band\b", re.IGNORECASE)
#: what follows an "or" up to the end of its clause
_OR_CLAUSE = re.compile(r"\bor\b([^,;:.?!]*)", re.IGNORECASE)
#: a verb that makes what follows an "or" a statement of its own ("… or the order is late")
_OWN_VERB = re.compile(
    r"\b(is|are|was|were|has|have|had|does|do|did|can|could|will|would|should|may|might|must)\b",
    re.IGNORECASE,
)


def joins_two_statements(text: str) -> bool:
    """Whether a noul's statement is two statements: any "and", or an "or" followed by a clause
    with its own verb ("the customer is angry or the order is late"). An "or" between two
    alternatives inside one statement ("threatening to cancel or leave") is one statement."""
    if _AND.search(text):
        return True
    return any(_OWN_VERB.search(clause) for clause in _OR_CLAUSE.findall(text))


_ESCAPE_WORDS = frozenset(
    {
        "other",
        "others",
        "unclear",
        "none",
        "unknown",
        "neither",
        "ambiguous",
        "uncertain",
        "unsure",
        "undecided",
        "abstain",
        "nothing",
        "else",
        "na",
        "review",
    }
)
_ESCAPE_PHRASE = re.compile(
    r"\b(none of|unclear|something else|anything else|not sure|cannot tell|can't tell|"
    r"neither|does not fit|doesn't fit|not enough information)\b",
    re.IGNORECASE,
)


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("_", " ").replace("-", " ").split())


def is_documented_entry(entry: Any) -> bool:
    """Whether an entry is null, a string, or the documented object `{"what", "not_for",
    "examples"}` with each key holding what it usually does — the shapes the editor's fields
    edit; every other structured description is kept and edited as JSON."""
    if entry is None or isinstance(entry, str):
        return True
    if not isinstance(entry, dict) or not set(entry) <= set(ENTRY_KEYS):
        return False
    return all(
        isinstance(value, _ENTRY_FIELD_TYPES[key][0])
        and (key != "examples" or all(isinstance(x, str) for x in value))
        for key, value in entry.items()
    )


def entry_text(entry: Any) -> str:
    """The words an entry (or instructions) gives the model, joined: what a lint reads. A
    string is its own text; the documented object reads `what`, `not_for`, then the examples;
    any other structured form reads every string and number inside it, in order (iterative)."""
    if isinstance(entry, str):
        return entry.strip()
    if not isinstance(entry, dict | list):
        return ""
    if isinstance(entry, dict) and set(entry) <= set(ENTRY_KEYS):
        entry = [entry.get(key) for key in ENTRY_KEYS]
    words: list[str] = []
    stack = [entry]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.strip():
                words.append(item.strip())
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            words.append(json.dumps(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return " ".join(words)


def _has_words(instructions: Any, criteria: Any) -> bool:
    """Whether a noul gives the model something to judge: words in its instructions or in one
    of its cases."""
    cases = criteria.values() if isinstance(criteria, dict) else ()
    return bool(entry_text(instructions)) or any(entry_text(case) for case in cases)


def _looks_like_question(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def detect_form(value: Any) -> Form:
    """Which of the four forms an object is in. A map whose every value is a typed question is a
    bare map, even when its ids happen to be `state`, `questions` or `format`."""
    if isinstance(value, dict) and value:
        if all(_looks_like_question(v) for v in value.values()):
            return Form.BARE
        if "format" in value and not _looks_like_question(value["format"]):
            return Form.EXPORT
        if any(k in value and not _looks_like_question(value[k]) for k in ("questions", "state")):
            return Form.PROVIDER if "model" in value else Form.DECISIONS
    return Form.BARE


def validate(
    value: Any,
    *,
    limits: Limits,
    lints: bool = True,
    semantic: Callable[[dict[str, Question], Any, list[str]], list[Issue]] | None = None,
) -> Validation:
    """Validate a document in any of its forms against `limits` — the configured ones
    (settings.DECISIONS_LIMITS) wherever the console asks. Never raises for a JSON value.
    With `lints`, the structural lints too; `semantic` (questions, the body's state or ABSENT,
    every question id) gives the semantic lints' warnings, which `check.validate` hands in:
    this module knows no semantic lint."""
    checker = _Checker(limits, lints)
    if not isinstance(value, dict):
        checker.error(
            (),
            "document_not_object",
            f"a question set document is a JSON object; got {describe(value)}",
        )
        return Validation(checker.errors, checker.warnings)
    form = detect_form(value)
    state: Any = ABSENT
    meta: dict[str, Any] = {}
    if form is Form.BARE:
        raw_questions = value
    else:
        checker.repeated_keys(value, (), "field", None)
        checker.unknown_keys(value, form)
        raw_questions = value.get("questions", ABSENT)
        if form is Form.EXPORT:
            checker.export_fields(value)
        else:
            state = checker.state(value)
            if form is Form.PROVIDER:
                checker.nonblank_string(value, "model", "invalid_model", required=True)
            else:
                if value.get("profile") is not None:  # null: no profile, as absent
                    checker.nonblank_string(value, "profile", "invalid_profile", required=False)
        meta = {
            k: value[k]
            for k in WRAPPER_KEYS[form]
            if k in value and k not in ("state", "questions")
        }
        if raw_questions is ABSENT:
            checker.error(
                ("questions",), "missing_questions", f"the {form.value} body has no questions"
            )
    questions = None
    if raw_questions is not ABSENT:
        # A bare map is addressed as `questions.<id>` too, so paths read the same in every form.
        questions = checker.questions(raw_questions, ("questions",))
    if form is Form.EXPORT and "advice" in value and questions is not None:
        checker.advice(value["advice"], questions)
    if lints and questions and not checker.errors:
        checker.lint_budget(raw_questions, state)
    if lints and semantic and questions:
        checker.warnings.extend(semantic(questions, state, list(raw_questions)))
    document = None
    if not checker.errors and questions is not None:
        if lints:
            checker.warnings.extend(provider_refusals(questions, state))
        document = Document(form, questions, state, meta)
        claimed = meta.get("sha256")
        if form is Form.EXPORT and claimed is not None and claimed != document.sha256:
            checker.error(
                ("sha256",),
                "sha256_mismatch",
                "sha256 does not match the questions; they were changed after the export "
                "(remove sha256 to import them as they are)",
                None,
                claimed,
                document.sha256,
            )
            document = None
    return Validation(checker.errors, checker.warnings, document, form)


def validate_advice(advice: Any, questions: Mapping[str, Question]) -> list[Issue]:
    """The errors of an `advice` object against the parsed questions it advises on."""
    checker = _Checker(DEFAULT_LIMITS, lints=False)
    checker.advice(advice, questions)
    return checker.errors


def validate_state(state: Any, *, limits: Limits) -> list[Issue]:
    """The errors of a state on its own (its serialised size against the limit)."""
    checker = _Checker(limits, lints=False)
    checker.state({"state": state})
    return checker.errors


#: The wires that carry the provider's published request schema (the official SDK's
#: `SystemOneRequest`): they refuse what it refuses before a call is spent. The runtime takes any
#: JSON state (seed 000) and forwards it to the provider, whose answer it passes on.
SCHEMA_WIRES: Final = ("typesafe", "openrouter")
#: The state's JSON types the provider's schema takes.
SCHEMA_STATE_TYPES: Final = (str, dict, list)


def provider_refusals(
    questions: Mapping[str, Question] | None = None, state: Any = ABSENT
) -> list[Issue]:
    """What the provider's published schema refuses in questions and a state this contract
    accepts: a `null`, boolean or number state, and a `null` score level. Each
    names the wires that refuse it; the console warns at the field and the schema wires refuse
    the call as the provider would (422), before spending it."""
    wires = " and ".join(f"`{w}`" for w in SCHEMA_WIRES)
    out: list[Issue] = []
    if state is not ABSENT and not isinstance(state, SCHEMA_STATE_TYPES):
        out.append(
            Issue(
                "state",
                "state_refused_by_provider",
                f"a state that is {describe(state)} is any JSON to the runtime, but the "
                f"provider's schema takes only a string, an object or an array: the {wires} "
                "wires refuse it, and the provider refuses it behind the runtime — wrap it, e.g. "
                '{"value": …}',
                None,
                "a string, an object or an array",
                describe(state),
                ("state",),
            )
        )
    for qid, question in (questions or {}).items():
        if question.type != "score":
            continue
        for i, level in enumerate(question.criteria):
            if level is None:
                loc: Loc = ("questions", qid, "criteria", i)
                out.append(
                    Issue(
                        path_of(loc),
                        "null_level_refused_by_provider",
                        _shorter_ids(
                            f"level {i} of score `{qid}` is null: the provider's schema takes a "
                            f"description for every level, so the {wires} wires refuse it, and "
                            "the official SDK cannot read a null level echoed in an answer's "
                            "legend — describe the level",
                            qid,
                        ),
                        qid,
                        None,
                        None,
                        loc,
                    )
                )
    return out


def parse(value: Any, *, limits: Limits) -> Document:
    """The `Document` of a valid value, or `InvalidDocument` with every error."""
    result = validate(value, limits=limits)
    if result.document is None:
        raise InvalidDocument(result.errors, result.warnings)
    return result.document
