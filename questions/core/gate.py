"""The CI gate's rules (pure Python): what a gate run measured, held against its bounds, and
the result as JSON and as JUnit XML. `questions.services.gates` runs the label's approved
version and measures; the command line (`questions gate`) translates.

A gate holds when every labelled state was answered and every bound given holds:

- `min_pass_rate` — a floor for the set's pass rate over its labelled answers, and for each
  question's own (a question below it fails its test case, naming the states it missed);
- `max_ece` — a ceiling for the expected calibration error (`questions.metrics`) of the nouls'
  P(true) and of the choices' chosen probability, the worse of the two;
- `max_flip_rate` — a ceiling for the share of labelled states whose decision differs from the
  answers the version was approved on (its evidence run): over the states both answered, a
  state flips when any question's reading differs — a choice's option, a score's nearest
  level, a noul's side of the threshold (each run at its own), `deltas.compare_readings`;
- `max_cost_per_1k` — a ceiling for what 1,000 calls cost: the mean cost of the calls that
  answered the gated states, each `answers.cost_of` its usage and the wire's price.

With `--strict-lints` the gate also holds only when the version has no lint warning open: the
findings accepted with a reason (`LintAcceptance`) aside, any warning of its document fails it.

A bound that cannot be measured (nothing checked, no evidence run, no usage recorded) does not
hold: a gate fails closed.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from questions.core import metrics, stats

#: a gate run's `BatchRun.kind`: its own, so it is never review evidence (the version's latest
#: run, the scorecard, the set list's last pass rate, an approval's evidence run)
KIND = "gate"
#: what a run list calls it
TITLE = "gate run"
#: the bounds a gate takes: name → its flag, whether it is a floor, and how it is shown
BOUNDS = {
    "min_pass_rate": ("--min-pass-rate", True, "pass rate"),
    "max_ece": ("--max-ece", False, "expected calibration error"),
    "max_flip_rate": ("--max-flip-rate", False, "flip rate against the approval's evidence"),
    "max_cost_per_1k": ("--max-cost-per-1k", False, "cost per 1,000 calls"),
}
#: the bound every gate has: each labelled state answered
ANSWERED = "answered"
#: the bound `--strict-lints` adds: no lint warning open
LINTS = "lints"
LINTS_FLAG = "--strict-lints"
#: the states a failure message names (the test case's text names them all)
NAMED_IN_MESSAGE = 10


@dataclass(frozen=True)
class Bounds:
    min_pass_rate: float | None = None
    max_ece: float | None = None
    max_flip_rate: float | None = None
    max_cost_per_1k: float | None = None

    def given(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in BOUNDS if getattr(self, name) is not None}

    def problem(self) -> str | None:
        """Why these bounds cannot be used, or None: the rates are fractions from 0 to 1, the
        cost a finite amount of at least 0."""
        for name, value in self.given().items():
            flag = BOUNDS[name][0]
            if not math.isfinite(value):
                return f"{flag} is a number, not {value}"
            if name == "max_cost_per_1k":
                if value < 0:
                    return f"{flag} is an amount of at least 0, not {value}"
            elif not 0 <= value <= 1:
                return f"{flag} is a fraction from 0 to 1, not {value}"
        return None


@dataclass(frozen=True)
class LintCheck:
    """The gated version's lints, with `--strict-lints`: each warning still open (as its
    line reads: path, message, code) and how many findings were accepted with a reason."""

    open: list[str]
    accepted: int = 0


@dataclass(frozen=True)
class Miss:
    """A labelled answer that missed: the state, what it expected, what was answered, and how
    sure it was of another answer (`metrics.wrong_confidence`; a gate lists the most
    confidently wrong first)."""

    state: str
    expected: Any
    answered: str
    wrong: float | None = None


@dataclass
class QuestionMeasure(stats.Rated):
    question: str
    qtype: str
    labelled: int = 0  # labelled states that expect an answer of it
    checked: int = 0
    passed: int = 0
    missed: list[Miss] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    flipped: list[str] = field(default_factory=list)


@dataclass
class Measured(stats.Rated):
    """What a gate run found (`questions.services.gates` fills it in)."""

    states: int
    unanswered: dict[str, str]  # state name → why it got no answer
    checked: int
    passed: int
    questions: dict[str, QuestionMeasure]
    ece: dict[str, tuple[float | None, int]]  # "noul"/"choice" → (ECE, answers it is over)
    flips: tuple[int, int] | None  # (states flipped, states compared); None: nothing to compare
    flips_missing: str = ""  # why there is nothing to compare
    cost_per_call: float | None = None
    cost_calls: int = 0  # the calls the cost is the mean of
    price_per_million: float | None = None
    duration_s: float = 0.0
    #: per question, the states a reviewer marked ambiguous: no pass rate counts them
    ambiguous: dict[str, int] = field(default_factory=dict)

    @property
    def left_out(self) -> str:
        """The ambiguous states left out of the pass rates, in words ("" when none)."""
        total = sum(self.ambiguous.values())
        return f"{total} ambiguous left out" if total else ""


@dataclass(frozen=True)
class BoundResult:
    name: str
    flag: str
    value: float | None
    limit: float | None
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "flag": self.flag,
            "value": self.value,
            "limit": self.limit,
            "ok": self.ok,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class QuestionResult:
    measure: QuestionMeasure
    ok: bool
    skipped: bool
    message: str


@dataclass(frozen=True)
class Result:
    ok: bool
    bounds: list[BoundResult]
    questions: list[QuestionResult]
    measured: Measured


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED_IN_MESSAGE])
    return shown + (
        f" and {len(names) - NAMED_IN_MESSAGE} more" if len(names) > NAMED_IN_MESSAGE else ""
    )


def _miss(miss: Miss) -> str:
    return (
        f"{miss.state} (expected {metrics.expected_text(miss.expected)}, answered {miss.answered})"
    )


def _bound(name: str, limit: float, m: Measured) -> BoundResult:
    flag, floor, _ = BOUNDS[name]
    detail = ""
    if name == "min_pass_rate":
        value = m.pass_rate
        detail = (
            f"pass rate {stats.rate_words(m.passed, m.checked)} of the labelled answers"
            + (f" ({m.left_out})" if m.left_out else "")
            if value is not None
            else "nothing was checked: no labelled answer came back"
        )
    elif name == "max_ece":
        measured = {kind: ece for kind, (ece, _) in m.ece.items() if ece is not None}
        value = max(measured.values()) if measured else None
        detail = (
            ", ".join(
                f"{kind} {ece:.3f} over {n} answers"
                for kind, (ece, n) in m.ece.items()
                if ece is not None
            )
            if measured
            else "no noul or choice answer was labelled: nothing to calibrate"
        )
    elif name == "max_flip_rate":
        value = m.flips[0] / m.flips[1] if m.flips and m.flips[1] else None
        if value is not None:
            detail = (
                f"{m.flips[0]}/{m.flips[1]} states decided otherwise than on approval "
                f"({_rate(value)})"
            )
        else:
            detail = m.flips_missing or "no state was answered in both runs"
    else:
        value = None if m.cost_per_call is None else m.cost_per_call * 1000
        detail = (
            f"${value:.6f} per 1,000 calls (the mean of {m.cost_calls} calls' cost at "
            f"${m.price_per_million} per million input tokens)"
            if value is not None
            else "no cost known: no call that answered these states recorded its usage"
        )
    ok = value is not None and (value >= limit if floor else value <= limit)
    if value is not None:
        relation = ("at least" if floor else "at most") if ok else ("below" if floor else "above")
        detail += f"; {relation} {_limit(name, limit)}"
    return BoundResult(name, flag, value, limit, ok, detail)


def _limit(name: str, limit: float) -> str:
    """A bound's limit as its value is shown: dollars, a plain number, or a percentage."""
    if name == "max_cost_per_1k":
        return f"${limit}"
    if name == "max_ece":
        return f"{limit:g}"
    return _rate(limit)


def _answered(m: Measured) -> BoundResult:
    missing = sorted(m.unanswered)
    if not missing:
        detail = f"every labelled state answered ({m.states}/{m.states})"
    else:
        detail = (
            f"{len(missing)} of {m.states} labelled states were not answered in full: "
            + "; ".join(f"{name} ({m.unanswered[name]})" for name in missing[:NAMED_IN_MESSAGE])
        )
    return BoundResult(ANSWERED, "", float(len(missing)), 0.0, not missing, detail)


def _lints(lints: LintCheck) -> BoundResult:
    accepted = f" ({lints.accepted} accepted with a reason)" if lints.accepted else ""
    if not lints.open:
        detail = f"no lint warning open{accepted}"
    else:
        shown = "; ".join(lints.open[:NAMED_IN_MESSAGE])
        more = len(lints.open) - NAMED_IN_MESSAGE
        detail = (
            f"{len(lints.open)} lint warning{'' if len(lints.open) == 1 else 's'} open{accepted}: "
            + shown
            + (f"; and {more} more" if more > 0 else "")
            + " — fix them, or accept each with a reason (questions lint-accept)"
        )
    return BoundResult(LINTS, LINTS_FLAG, float(len(lints.open)), 0.0, not lints.open, detail)


def _question(q: QuestionMeasure, floor: float | None) -> QuestionResult:
    if not q.labelled:
        return QuestionResult(q, True, True, "no labelled state expects an answer of it")
    problems = []
    rate = q.pass_rate
    below = floor is not None and (rate is None or rate < floor)
    if below:
        shown = stats.rate_words(q.passed, q.checked)
        problems.append(f"pass rate {shown} is below {_rate(floor)}")
    if q.unanswered:
        problems.append(
            f"no answer for {len(q.unanswered)} labelled state(s): {_names(q.unanswered)}"
        )
    summary = f"pass rate {stats.rate_words(q.passed, q.checked)}"
    if q.missed:
        missed = [_miss(x) for x in q.missed]
        summary += f"; missed: {_names(missed)}"
        if below:
            problems[0] += f"; missed: {_names(missed)}"
    return QuestionResult(q, not problems, False, "; ".join(problems) or summary)


def judge(measured: Measured, bounds: Bounds, lints: LintCheck | None = None) -> Result:
    """Whether a gate holds: every labelled state answered, every bound given, every
    question at or above the pass-rate floor (when one is given), and, with `lints`
    (`--strict-lints`), no lint warning open."""
    results = [_answered(measured)]
    results += [_bound(name, limit, measured) for name, limit in bounds.given().items()]
    if lints is not None:
        results.append(_lints(lints))
    questions = [_question(q, bounds.min_pass_rate) for q in measured.questions.values()]
    ok = all(b.ok for b in results) and all(q.ok for q in questions)
    return Result(ok, results, questions, measured)


def as_json(result: Result, about: dict[str, Any]) -> dict[str, Any]:
    """The gate as `questions gate --json` prints it: what was gated (`about`), whether it
    holds, each bound with its value, limit and verdict, and each question."""
    m = result.measured
    return {
        **about,
        "ok": result.ok,
        "states": m.states,
        "answered": m.states - len(m.unanswered),
        "pass_rate": m.pass_rate,
        "pass_rate_interval": stats.interval_list(m.passed, m.checked),
        "ambiguous": dict(m.ambiguous),
        "bounds": [b.to_json() for b in result.bounds],
        "questions": {
            q.measure.question: {
                "type": q.measure.qtype,
                "ok": q.ok,
                "skipped": q.skipped,
                "labelled": q.measure.labelled,
                "checked": q.measure.checked,
                "passed": q.measure.passed,
                "pass_rate": q.measure.pass_rate,
                "pass_rate_interval": stats.interval_list(q.measure.passed, q.measure.checked),
                "missed": [
                    {
                        "state": x.state,
                        "expected": x.expected,
                        "answered": x.answered,
                        "wrong_confidence": x.wrong,
                    }
                    for x in q.measure.missed
                ],
                "unanswered": q.measure.unanswered,
                "flipped": q.measure.flipped,
                "message": q.message,
            }
            for q in result.questions
        },
        "unanswered": m.unanswered,
    }


def junit_xml(result: Result, suite: str, classname: str) -> str:
    """The gate as JUnit XML: one test suite, a test case per question (`<classname>.questions`,
    named by its id; skipped when no labelled state expects it) and one per bound
    (`<classname>.bounds`, named by the bound), a failure naming what crossed."""
    cases = []
    for q in result.questions:
        case = ET.Element("testcase", classname=f"{classname}.questions", name=q.measure.question)
        if q.skipped:
            ET.SubElement(case, "skipped", message=q.message)
        elif not q.ok:
            failure = ET.SubElement(case, "failure", message=q.message, type="gate")
            failure.text = "\n".join(
                [
                    *(_miss(x) for x in q.measure.missed),
                    *(f"{s} (no answer)" for s in q.measure.unanswered),
                ]
            )
        else:
            ET.SubElement(case, "system-out").text = q.message
        cases.append(case)
    for b in result.bounds:
        case = ET.Element("testcase", classname=f"{classname}.bounds", name=b.name)
        if b.ok:
            ET.SubElement(case, "system-out").text = b.detail
        else:
            ET.SubElement(case, "failure", message=b.detail, type="gate")
        cases.append(case)
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", name="questions gate", **counts)
    suite_element = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        **counts,
        skipped=str(skipped),
        time=f"{result.measured.duration_s:.3f}",
    )
    suite_element.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
