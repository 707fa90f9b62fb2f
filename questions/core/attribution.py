"""Attribution: which words decide an answer — leave one part out, see what moves (pure
Python; no Django).

For one state and one question (or every question) the questions are asked once as written,
`repeats` more times unchanged (the noise floor, as jev-why measures it), and once per *part*
left out:

- each sentence of a string's instructions (`instructions[1]`), each element of structured
  instructions (`instructions[0]`, `instructions.rubric`);
- each option's description (`criteria.billing`), and within the documented object its
  `what`, `not_for` and each example (`criteria.refund.not_for`, `criteria.refund.examples[0]`);
- each score level's description (`criteria[2]`: the level stays, its words go — an empty
  string, since the provider's schema refuses a `null` level);
- a noul's true and false cases (`criteria.true`);
- each top-level field of an object state (`state.ticket`), each element of an array state, each
  sentence of a text state (`state[1]`).

A part of a question is left out of that question alone (the others are not asked: questions
are independent); a part of the state is left out for every question attributed. A part whose
removal leaves the request invalid by the contract (`questions.spec`) or refused by the
provider's schema is not asked, and said so (`Skipped`).

Per part, `delta` is the probability of the answer given as written with the part left out,
less that probability as written (for a score, the change in the score; for a noul the
probability of the side it came down on). The noise floor of a question is the largest
|change| among the unchanged repeats, and never less than `ROUNDING_FLOOR` (answers come rounded
to two decimals: two rounded values differ by up to a hundredth with nothing changed). A part is
*decisive* when |delta| is above the floor.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from questions.core import spec
from questions.core.answers import HALF_HUNDREDTH, NOUL_THRESHOLD

#: a batch run's kind when it attributes (`BatchRun.kind`)
KIND = "attribution"
#: unchanged repeats asked for the noise floor by default, and at most
DEFAULT_REPEATS = 3
MAX_REPEATS = 10
#: the most calls one attribution asks (a run's variants are counted in a small integer, and
#: every call is a live one that costs)
MAX_CALLS = 2000
#: two values each rounded to two decimals may differ by this much with nothing changed
ROUNDING_FLOOR = 2 * HALF_HUNDREDTH
#: where a part lives: the state's parts are named `state…`
STATE = "state"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def sentences(text: str) -> list[str]:
    """A text's sentences, in order: split after `.`, `!` or `?` followed by white space."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@dataclass(frozen=True)
class Part:
    """One part that can be left out: `loc` (the keys that reach it: within the question, or
    from the state, first key `STATE`), the words it carries, and the question it belongs to
    (None: a part of the state)."""

    loc: tuple[str | int, ...]
    text: str
    question: str | None = None

    @property
    def path(self) -> str:
        """Where the part is, as an author reads it: `criteria.billing`, `instructions[1]`,
        `state.ticket`."""
        out = spec.path_of(self.loc)
        # an index reads as `[1]`, not `.1`
        return re.sub(r"\.(\d+)(?=\.|\[|$)", r"[\1]", out)

    @property
    def role(self) -> str:
        """Which key of a structured entry the words are, as a page heads them ("" for a
        whole description, a sentence or a field): `not for`, `example`, `what`."""
        if len(self.loc) > 2 and self.loc[0] == "criteria":
            return {"not_for": "not for", "examples": "example"}.get(str(self.loc[2]), "what")
        return ""

    def as_json(self) -> dict[str, Any]:
        return {"loc": list(self.loc), "text": self.text, "question": self.question}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Part:
        return cls(tuple(value["loc"]), value["text"], value.get("question"))


@dataclass(frozen=True)
class Skipped:
    """A part that is not asked, and why."""

    part: Part
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {**self.part.as_json(), "reason": self.reason}


@dataclass
class Plan:
    """What attributing asks: `questions` (the ids attributed), `repeats` unchanged calls, and
    one call per part. Variant 0 is as written, 1…repeats the repeats, then the parts in order."""

    questions: list[str]
    repeats: int
    parts: list[Part] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: each attributed question's type, as planned (the report reads it, not the document,
    #: which a draft may change later)
    types: dict[str, str] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return 1 + self.repeats + len(self.parts)

    @property
    def variants(self) -> int:
        return self.calls

    @property
    def question_asks(self) -> int:
        """How many questions all the calls carry together (what a cost per question reads)."""
        n = len(self.questions)
        return (1 + self.repeats) * n + sum(1 if p.question else n for p in self.parts)

    def part_of(self, variant: int) -> Part | None:
        """The part a variant leaves out; None for the call as written and its repeats."""
        index = variant - 1 - self.repeats
        return self.parts[index] if 0 <= index < len(self.parts) else None

    def as_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "repeats": self.repeats,
            "parts": [p.as_json() for p in self.parts],
            "skipped": [s.as_json() for s in self.skipped],
            "types": self.types,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Plan:
        return cls(
            questions=list(value["questions"]),
            repeats=value["repeats"],
            parts=[Part.from_json(p) for p in value["parts"]],
            skipped=[Skipped(Part.from_json(s), s["reason"]) for s in value["skipped"]],
            types=dict(value.get("types") or {}),
        )


# --- the parts ---------------------------------------------------------------------------------


def _text_parts(value: Any, base: tuple[str | int, ...]) -> list[tuple[tuple, str]]:
    """Instructions or a state's parts: sentences of a string, elements of an array, fields of
    an object (each with the words inside it)."""
    if isinstance(value, str):
        return [((*base, i), s) for i, s in enumerate(sentences(value))]
    if isinstance(value, list):
        return [((*base, i), spec.entry_text(v)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [((*base, k), spec.entry_text(v)) for k, v in value.items()]
    return []


def _entry_parts(entry: Any, base: tuple[str | int, ...]) -> list[tuple[tuple, str]]:
    """An option's or level's parts: a string whole; the documented object's `what`,
    `not_for` and each example; any other structured description whole."""
    if entry is None:
        return []
    if isinstance(entry, dict) and entry and spec.is_documented_entry(entry):
        out: list[tuple[tuple, str]] = []
        for key in spec.ENTRY_KEYS:
            if key not in entry:
                continue
            if key == "examples":
                out += [((*base, key, i), x) for i, x in enumerate(entry[key])]
            else:
                out.append(((*base, key), spec.entry_text(entry[key])))
        return out
    text = spec.entry_text(entry)
    return [(base, text)] if text else []


def question_parts(question: spec.Question) -> list[Part]:
    """Every part of one question, in the order the author wrote them."""
    found = []
    if question.instructions is not spec.ABSENT:
        found += _text_parts(question.instructions, ("instructions",))
    criteria = question.criteria
    if question.type == "noul" and isinstance(criteria, dict):
        found += [(("criteria", k), spec.entry_text(v)) for k, v in criteria.items()]
    elif question.type == "choice":
        for name, entry in criteria.items():
            found += _entry_parts(entry, ("criteria", name))
    elif question.type == "score":
        for i, entry in enumerate(criteria):
            found += _entry_parts(entry, ("criteria", i))
    return [Part(loc, text, question.id) for loc, text in found if text]


def state_parts(state: Any) -> list[Part]:
    return [Part(loc, text) for loc, text in _text_parts(state, (STATE,))]


# --- leaving one out ---------------------------------------------------------------------------


def _without(value: Any, loc: Sequence[str | int], *, level: bool = False) -> Any:
    """`value` with what `loc` reaches taken out (a copy; the original is untouched): a key of
    an object, an element of an array, a sentence of a string. `level`: the entry is a score
    level, which keeps its place and loses its words."""
    key, rest = loc[0], loc[1:]
    if isinstance(value, str):
        kept = sentences(value)
        del kept[key]
        return " ".join(kept)
    if rest:
        inner = _without(value[key], rest)
        copy = dict(value) if isinstance(value, dict) else list(value)
        copy[key] = inner
        return copy
    if level:
        copy = list(value)
        copy[key] = ""
        return copy
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != key}
    return [v for i, v in enumerate(value) if i != key]


def _question_without(question: spec.Question, loc: tuple[str | int, ...]) -> spec.Question:
    where, rest = loc[0], loc[1:]
    if where == "instructions":
        value = question.instructions
        if isinstance(value, str) and len(sentences(value)) == 1:
            return dataclasses.replace(question, instructions=spec.ABSENT)
        return dataclasses.replace(question, instructions=_without(value, rest))
    criteria = question.criteria
    if question.type == "choice" and len(rest) == 1:
        return dataclasses.replace(question, criteria={**criteria, rest[0]: None})
    level = question.type == "score" and len(rest) == 1
    return dataclasses.replace(question, criteria=_without(criteria, rest, level=level))


def leave_out(
    questions: Mapping[str, spec.Question], state: Any, part: Part | None
) -> tuple[dict[str, spec.Question], Any]:
    """The questions and the state asked with `part` left out (None: as written). A part of a
    question is asked about that question alone."""
    if part is None:
        return dict(questions), state
    if part.question is None:
        return dict(questions), _without(state, part.loc[1:])
    return {part.question: _question_without(questions[part.question], part.loc)}, state


def _refusal(asked: Mapping[str, spec.Question], state: Any, limits: spec.Limits) -> str | None:
    """Why a left-out request is not asked (invalid by the contract, or refused by the
    provider's schema), or None."""
    document = {qid: q.to_json() for qid, q in asked.items()}
    result = spec.validate(document, limits=limits, lints=False)
    issues = result.errors or spec.validate_state(state, limits=limits)
    if not issues and result.document is not None:
        issues = spec.provider_refusals(result.document.questions, state)
    if not issues:
        return None
    issue = issues[0]
    return f"leaving it out makes the request invalid: {issue.path}: {issue.message}"


def plan(
    questions: Mapping[str, spec.Question],
    state: Any,
    *,
    question: str | None = None,
    repeats: int = DEFAULT_REPEATS,
    limits: spec.Limits,
) -> Plan:
    """What attributing `question` (None: every question) on `state` asks. `KeyError` names a
    question the set does not have; `ValueError` a repeat count out of range, or more than
    `MAX_CALLS` calls."""
    if question is not None and question not in questions:
        raise KeyError(question)
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"the noise floor takes 1 to {MAX_REPEATS} repeats, not {repeats}")
    ids = [question] if question is not None else list(questions)
    asked = {qid: questions[qid] for qid in ids}
    out = Plan(questions=ids, repeats=repeats, types={qid: asked[qid].type for qid in ids})
    candidates = [p for qid in ids for p in question_parts(asked[qid])] + state_parts(state)
    calls = 1 + repeats + len(candidates)  # counted before a part is checked: it stays cheap
    if calls > MAX_CALLS:
        raise ValueError(
            f"attributing {'every question' if question is None else question} on this state "
            f"takes {calls:,} calls; at most {MAX_CALLS:,}: attribute one question"
        )
    for part in candidates:
        reason = _refusal(*leave_out(asked, state, part), limits)
        if reason:
            out.skipped.append(Skipped(part, reason))
        else:
            out.parts.append(part)
    return out


# --- what moved --------------------------------------------------------------------------------


def value_of(question_type: str, written: Mapping[str, Any], answer: Mapping[str, Any]) -> float:
    """What `delta` is a change of: the probability of the answer given as written (a choice's
    written option; a noul's side — P(true) when it came down true, else P(false)), or a score."""
    if question_type == "choice":
        return float(answer["probabilities"].get(written["choice"], 0.0))
    if question_type == "score":
        return float(answer["score"])
    p = float(answer["noul"])
    return p if float(written["noul"]) >= NOUL_THRESHOLD else 1.0 - p


@dataclass
class Finding:
    """One part's finding: its change, and whether that is above the floor."""

    part: Part
    delta: float | None
    decisive: bool

    @property
    def shown(self) -> str:
        """The change as a page shows it: signed, two decimals; `n/a` when the call failed."""
        return "n/a" if self.delta is None else f"{self.delta:+.2f}".replace("-", "\u2212")

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.part.path,
            "text": self.part.text,
            "delta": None if self.delta is None else round(self.delta, 4),
            "decisive": self.decisive,
        }


def _label(question_type: str, part: Part) -> str:
    """What a part's words are, as a page heads them: `instructions`, `option billing`,
    `level 2`, `true case`, `state ticket`, `state sentence 1`."""
    where = part.loc[0]
    if where == "instructions":
        return "instructions"
    if where == STATE:
        key = part.loc[1]
        return f"state sentence {key}" if isinstance(key, int) else f"state {key}"
    name = part.loc[1]
    if question_type == "noul":
        return f"{name} case"
    return f"level {name}" if question_type == "score" else f"option {name}"


@dataclass
class Report:
    """One question's attribution: its answer as written, the noise floor and every part's
    finding, the largest change first."""

    question: str
    type: str
    answer: dict[str, Any] | None
    noise_floor: float | None
    findings: list[Finding]
    skipped: list[Skipped]
    #: the parts in the order the author wrote them (the question's, then the state's)
    written: list[Part] = field(default_factory=list)

    @property
    def decisive(self) -> list[Finding]:
        return [f for f in self.findings if f.decisive]

    def rank(self, part: Part) -> int | None:
        """A decisive part's place among the decisive ones (1 = moved most)."""
        for i, f in enumerate(self.decisive, 1):
            if f.part == part:
                return i
        return None

    def groups(self) -> list[tuple[str, list[tuple[Finding, int | None]]]]:
        """The findings as the words read, for a page: (what the words are, [(finding, rank)])
        in the order the author wrote them — the instructions, each option, level or case,
        then each field or sentence of the state."""
        by_part = {f.part: f for f in self.findings}
        ranks = {f.part: i for i, f in enumerate(self.decisive, 1)}
        out: list[tuple[str, list[tuple[Finding, int | None]]]] = []
        for part in self.written:
            label = _label(self.type, part)
            if not out or out[-1][0] != label:
                out.append((label, []))
            out[-1][1].append((by_part[part], ranks.get(part)))
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "noise_floor": None if self.noise_floor is None else round(self.noise_floor, 4),
            "parts": [f.as_json() for f in self.findings],
        }


def report(the_plan: Plan, answers: Mapping[int, Mapping[str, Any] | None]) -> list[Report]:
    """Per question attributed, what moved: `answers` maps a variant to its checked answers by
    question id (None or absent: that call failed)."""
    reports = []
    for qid in the_plan.questions:
        written = (answers.get(0) or {}).get(qid)
        kind = the_plan.types[qid]
        mine = [p for p in the_plan.parts if p.question in (qid, None)]
        skipped = [s for s in the_plan.skipped if s.part.question in (qid, None)]
        if written is None:
            findings = [Finding(p, None, False) for p in mine]
            reports.append(Report(qid, kind, None, None, findings, skipped, mine))
            continue
        base = value_of(kind, written, written)

        def change(variant: int, *, _qid=qid, _base=base, _kind=kind, _written=written):
            got = (answers.get(variant) or {}).get(_qid)
            return None if got is None else value_of(_kind, _written, got) - _base

        repeats = [d for v in range(1, the_plan.repeats + 1) if (d := change(v)) is not None]
        floor = max([ROUNDING_FLOOR, *(abs(d) for d in repeats)])
        findings = []
        for index, part in enumerate(the_plan.parts):
            if part not in mine:
                continue
            delta = change(1 + the_plan.repeats + index)
            decisive = delta is not None and abs(delta) > floor + 1e-9
            findings.append(Finding(part, delta, decisive))
        findings.sort(key=lambda f: -abs(f.delta) if f.delta is not None else math.inf)
        reports.append(Report(qid, kind, dict(written), floor, findings, skipped, mine))
    return reports
