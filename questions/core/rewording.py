"""Rewordings: what a suggestion may change in one question, the structured answer a drafting
model gives for it, and how a drafted candidate becomes a question (pure Python, no Django).

A rewording changes words only, never shape. Its *slots* are keyed by the question's own ids:
its instructions (when they are text, `null` or absent), and each option of a choice by name,
each level of a score by number (`"0"`, `"1"`, …), each case of a noul (`"true"`, `"false"`)
whose description is text — a string, `null` (named by its id alone), or the documented object,
whose `what` is reworded and whose `not_for` and examples are kept. A description in any other
structured form is kept as written and is no slot. So the answer's schema (`candidate_schema`)
is a closed object of those keys: a drafting model cannot add, drop, rename or retype anything.

What the drafter is told of each failing state is `Failing`: its name, the state, what was
expected and what was answered, and the attribution evidence — the question's parts whose
leaving out moved the wrong answer (`evidence_words`: "`criteria.billing` −0.72: it pulled
'heater-smoke' to `billing`, away from `damaged`").

`provenance_words` is the sentence a draft made from a suggestion carries ("suggested from run
12, better on 45 held-out states: +12 points [+4, +20]").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from questions.core import proof, spec, stats

#: the most candidates one suggestion drafts
MAX_CANDIDATES = 5
DEFAULT_CANDIDATES = 3
#: the longest text a drafted slot may hold, and a candidate's reason (characters)
MAX_TEXT = 1000
MAX_WHY = 300
INSTRUCTIONS = "instructions"
CRITERIA = "criteria"
WHY = "why"


def candidate_key(number: int) -> str:
    """The key of the `number`-th candidate (from 1) in a drafting model's answer."""
    return f"c{number}"


def _rewordable(entry: Any) -> bool:
    return (
        entry is None
        or isinstance(entry, str)
        or (isinstance(entry, dict) and spec.is_documented_entry(entry))
    )


def entry_slot_text(entry: Any) -> str:
    """The words of a rewordable entry: a string's own, a documented object's `what`."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        what = entry.get("what")
        return what if isinstance(what, str) else ""
    return ""


@dataclass(frozen=True)
class Slots:
    """The words a rewording may change: the instructions' text (None when they are
    structured, and so kept), and each rewordable entry's text by the question's own key."""

    instructions: str | None
    criteria: dict[str, str]

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.instructions is not None:
            out[INSTRUCTIONS] = self.instructions
        out[CRITERIA] = dict(self.criteria)
        return out


def _entries(question: spec.Question) -> list[tuple[str, Any]]:
    """(key, entry) of every option, level or case, in the author's order."""
    criteria = question.criteria
    if question.type == "choice":
        return list(criteria.items())
    if question.type == "score":
        return [(str(i), e) for i, e in enumerate(criteria)]
    if isinstance(criteria, dict):
        return [(k, v) for k, v in criteria.items() if k in spec.NOUL_CRITERIA_KEYS]
    return []


def slots(question: spec.Question) -> Slots:
    """What a rewording of `question` may change, with its current words."""
    instructions = question.instructions
    said: str | None = None
    if instructions is spec.ABSENT or instructions is None:
        said = ""
    elif isinstance(instructions, str):
        said = instructions
    return Slots(
        instructions=said,
        criteria={k: entry_slot_text(e) for k, e in _entries(question) if _rewordable(e)},
    )


def _string() -> dict[str, Any]:
    return {"type": "string"}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def candidate_schema(question: spec.Question) -> dict[str, Any]:
    """One candidate's JSON Schema: the question's slots, each a string, and `why`."""
    found = slots(question)
    properties: dict[str, Any] = {}
    if found.instructions is not None:
        properties[INSTRUCTIONS] = _string()
    properties[CRITERIA] = _closed({k: _string() for k in found.criteria})
    properties[WHY] = _string()
    return _closed(properties)


def reply_schema(question: spec.Question, count: int) -> dict[str, Any]:
    """The whole answer's schema: `count` candidates, `c1` … `c<count>`, each closed."""
    one = candidate_schema(question)
    return _closed({candidate_key(n): one for n in range(1, count + 1)})


@dataclass
class Drafted:
    """One drafted candidate as the model gave it: its texts by slot and its reason; or, when
    it breaks the schema or a bound, `problem` (the others still count)."""

    number: int
    texts: Slots | None = None
    why: str = ""
    problem: str = ""


def _text(value: Any, where: str, most: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} is {spec.describe(value)}, not text")
    if len(value) > most:
        raise ValueError(f"{where} has {len(value):,} characters; at most {most:,}")
    return value


def read_candidate(question: spec.Question, number: int, raw: Any) -> Drafted:
    """One candidate of a drafting model's answer, checked against its schema and bounds."""
    wanted = slots(question)
    try:
        if not isinstance(raw, Mapping):
            raise ValueError(f"it is {spec.describe(raw)}, not an object")
        keys = set(candidate_schema(question)["required"])
        if set(raw) != keys:
            missing, extra = sorted(keys - set(raw)), sorted(set(raw) - keys)
            said = f"lacks {', '.join(missing)}" if missing else f"adds {', '.join(extra)}"
            raise ValueError(f"it {said} (the schema forbids it)")
        criteria = raw[CRITERIA]
        if not isinstance(criteria, Mapping) or set(criteria) != set(wanted.criteria):
            raise ValueError(
                "its criteria must name exactly "
                + (", ".join(f"`{k}`" for k in wanted.criteria) or "nothing")
            )
        texts = Slots(
            instructions=None
            if wanted.instructions is None
            else _text(raw[INSTRUCTIONS], INSTRUCTIONS, MAX_TEXT).strip(),
            criteria={
                k: _text(criteria[k], f"criteria.{k}", MAX_TEXT).strip() for k in wanted.criteria
            },
        )
        why = _text(raw[WHY], WHY, MAX_WHY).strip()
    except ValueError as exc:
        return Drafted(number, problem=f"candidate {number} breaks the answer's schema: {exc}")
    return Drafted(number, texts, why)


def read_reply(question: spec.Question, count: int, content: Any) -> list[Drafted]:
    """The `count` candidates of a drafting model's answer (its JSON object); `ValueError` when
    the answer as a whole is not one (not an object, a candidate missing, one never asked)."""
    if not isinstance(content, Mapping):
        raise ValueError(f"the answer is {spec.describe(content)}, not an object")
    keys = [candidate_key(n) for n in range(1, count + 1)]
    missing = [k for k in keys if k not in content]
    extra = [k for k in content if k not in keys]
    if missing or extra:
        said = f"lacks {', '.join(missing)}" if missing else f"adds {', '.join(extra[:5])}"
        raise ValueError(f"the answer {said}; it must hold {', '.join(keys)}")
    return [read_candidate(question, n, content[candidate_key(n)]) for n in range(1, count + 1)]


def _reworded_entry(entry: Any, text: str) -> Any:
    if isinstance(entry, dict):
        return {"what": text, **{k: v for k, v in entry.items() if k != "what"}}
    return text


def reworded(question: spec.Question, texts: Slots) -> dict[str, Any]:
    """`question` (as its JSON) with the slots' texts in place: a description in its own form
    (a documented object keeps its `not_for` and examples), everything else as written. An
    empty text keeps the words it stands for: a rewording rewords, it does not erase."""
    out = question.to_json()
    before = slots(question)
    new = texts.instructions
    if before.instructions is not None and new and new != before.instructions:
        out[INSTRUCTIONS] = new
    changed = {k: t for k, t in texts.criteria.items() if t and before.criteria.get(k) != t}
    if not changed:
        return out
    criteria = question.criteria
    if question.type == "score":
        out[CRITERIA] = [
            _reworded_entry(e, changed[str(i)]) if str(i) in changed else e
            for i, e in enumerate(criteria)
        ]
    else:
        out[CRITERIA] = {
            k: _reworded_entry(e, changed[k]) if k in changed else e for k, e in criteria.items()
        }
    return out


def with_question(document: Mapping[str, Any], qid: str, question: Any) -> dict[str, Any]:
    """`document` (a questions map) with `qid` replaced, in its place."""
    return {k: (question if k == qid else v) for k, v in document.items()}


# --- what the drafter is told ------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One part of the question whose leaving out moved a wrong answer: where it is, its
    words, and the change (`attribution.Finding`'s, for the written answer)."""

    path: str
    text: str
    delta: float

    def as_json(self) -> dict[str, Any]:
        return {"part": self.path, "words": self.text, "delta": round(self.delta, 4)}


@dataclass
class Failing:
    """A training state the question answered wrong: its name, the state, what it expected
    and what it got, and the evidence of attribution (empty when it was not attributed)."""

    name: str
    state: Any
    expected: Any
    answered: Any
    evidence: list[Finding] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "expected": self.expected,
            "answered": self.answered,
            "evidence": [f.as_json() for f in self.evidence],
        }


def answer_value(qtype: str, answer: Mapping[str, Any]) -> Any:
    """What an answer says, as the drafter reads it: the option, the score, true or false."""
    if qtype == "choice":
        return answer.get("choice")
    if qtype == "score":
        return answer.get("score")
    return answer.get("noul", 0) >= 0.5


def shown_delta(delta: float) -> str:
    return f"{delta:+.2f}".replace("-", "\u2212")


def evidence_words(failing: Failing, finding: Finding) -> str:
    """One finding as a sentence: what the part did to the wrong answer."""
    said, wanted = _said(failing.answered), _said(failing.expected)
    if finding.delta < 0:
        did = f"it pulled '{failing.name}' to {said}, away from {wanted}"
    else:
        did = f"it held '{failing.name}' back from {said}"
    return f"`{finding.path}` {shown_delta(finding.delta)}: {did}"


def _said(value: Any) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float):
        return f"`{value:.2f}`"
    return f"`{value}`"


# --- candidates, their ranking and provenance ---------------------------------------------------

#: a candidate's statuses: drafted and checked (`PENDING`), proven; and those never proven —
#: refused (its schema, a bound or the contract), changing no word, or repeating another
PENDING, PROVEN = "pending", "proven"
REFUSED, UNCHANGED, SAME = "refused", "unchanged", "same"
#: the candidates a draft can be made from: valid by the contract, changing the question
USABLE = (PENDING, PROVEN)

#: the order candidates are listed in by their proof's verdict (then their interval)
VERDICT_ORDER = {proof.BETTER: 0, proof.NOT_PROVEN: 1, proof.WORSE: 2}


def rank_key(verdict: str | None, interval: Sequence[float] | None, difference: float | None):
    """Sort key of a candidate: better first, then not proven, worse, unproven last; within a
    verdict the higher low end of the difference's interval, then the larger difference."""
    low = interval[0] if interval else float("-inf")
    return (
        VERDICT_ORDER.get(verdict or "", len(VERDICT_ORDER)),
        -low,
        -(difference if difference is not None else float("-inf")),
    )


def points(value: float) -> str:
    """A difference in pass rate as signed points: +12, −4."""
    return f"{round(value * 100):+d}".replace("-", "\u2212")


def interval_points(interval: Sequence[float] | None) -> str:
    if not interval:
        return "no interval"
    return f"[{points(interval[0])}, {points(interval[1])}]"


def candidate_proof_words(*, run: int | None, candidate: Mapping[str, Any]) -> str:
    """`provenance_words` of a stored candidate (its proof as `proof.QuestionProof.as_json`)."""
    found = candidate.get("proof") or {}
    return provenance_words(
        run=run,
        verdict=found.get("verdict") or proof.NOT_PROVEN,
        n=found.get("n") or 0,
        difference=found.get("difference"),
        interval=found.get("difference_interval"),
    )


def candidate_provenance(*, run: int | None, suggestion: int, candidate: Mapping[str, Any]) -> str:
    """What a draft made from a stored candidate carries on its record: its proof in words,
    and the suggestion and the candidate it is."""
    said = candidate_proof_words(run=run, candidate=candidate)
    return f"{said} (suggestion {suggestion}, candidate {candidate['number']})"


def provenance_words(
    *,
    run: int | None,
    verdict: str,
    n: int,
    difference: float | None,
    interval: Sequence[float] | None,
) -> str:
    """How a draft made from a suggestion says where it came from and what proved it: "suggested
    from run 12, better on 45 held-out states: +12 points [+4, +20]" (and, on fewer than
    `proof.FEW_STATES` states, that they are few)."""
    source = f"suggested from run {run}" if run else "suggested"
    if not n or difference is None:
        return f"{source}, not proven: no held-out state gave a pair"
    few = f" (fewer than {proof.FEW_STATES}: a wide interval)" if n < proof.FEW_STATES else ""
    return (
        f"{source}, {verdict} on {stats.plural(n, 'held-out state')}{few}: "
        f"{points(difference)} points {interval_points(interval)}"
    )
