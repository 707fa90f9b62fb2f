"""A proof: whether a candidate wording decides a set's held-out states better than the
version it would replace (pure Python, no Django).

Only the questions the candidate changed are judged (`changes`). Each is asked in both wordings
about the same held-out labelled states, so every state gives a pair — passed with the
version's words, passed with the candidate's — and the verdict reads the pairs, not two pass
rates side by side: states that pass or fail either way carry no information, the states that
flipped do (`stats.paired`: McNemar's exact test, and the paired difference's interval).

- `better` — the paired difference's 95 % interval lies above 0;
- `worse` — it lies below 0;
- `not proven` — it holds 0 (or nothing was paired).

Beside each verdict, the candidate's shuffled floor (`controls`: its choice descriptions
shuffled among its options): a wording whose pass rate is not clearly above its floor carries
no signal in its words, whatever the version scored. A proof on fewer than `FEW_STATES`
held-out states says so in words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from questions.core import controls, metrics, spec, stats
from questions.core.answers import NOUL_THRESHOLD

BETTER = "better"
WORSE = "worse"
NOT_PROVEN = "not proven"
VERDICTS = (BETTER, WORSE, NOT_PROVEN)
#: below this many paired held-out states a proof says it rests on few
FEW_STATES = 20
#: who asked: the version, the candidate
VERSION, CANDIDATE = "version", "candidate"


@dataclass(frozen=True)
class Changes:
    """How a candidate's questions stand to a version's, by id, in the candidate's order."""

    changed: list[str]
    unchanged: list[str]
    added: list[str]
    removed: list[str]


def changes(before: Mapping[str, spec.Question], after: Mapping[str, spec.Question]) -> Changes:
    """The questions `after` rewords (same id, other content), keeps, adds and drops."""
    return Changes(
        changed=[q for q in after if q in before and before[q].sha256 != after[q].sha256],
        unchanged=[q for q in after if q in before and before[q].sha256 == after[q].sha256],
        added=[q for q in after if q not in before],
        removed=[q for q in before if q not in after],
    )


def verdict(interval: stats.Interval | None) -> str:
    """`better`, `worse` or `not proven` from the paired difference's interval."""
    if interval is None:
        return NOT_PROVEN
    low, high = interval
    if low > 0:
        return BETTER
    if high < 0:
        return WORSE
    return NOT_PROVEN


def overall(verdicts: Iterable[str]) -> str:
    """Every question better: `better`; any worse: `worse`; else `not proven`."""
    found = list(verdicts)
    if WORSE in found:
        return WORSE
    if found and all(v == BETTER for v in found):
        return BETTER
    return NOT_PROVEN


@dataclass(frozen=True)
class Asked:
    """One held-out state's answers: by the version's words (`before`), the candidate's
    (`after`), and the candidate's shuffles in turn; None where that call failed."""

    state: str
    expected: Mapping[str, Any]
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    shuffled: Sequence[Mapping[str, Any] | None] = ()


@dataclass
class QuestionProof:
    question: str
    qtype: str
    paired: stats.Paired
    floor: controls.QuestionControl | None = None
    #: held-out states that expect an answer of the question but gave no pair (a call failed)
    unpaired: int = 0

    @property
    def verdict(self) -> str:
        return verdict(self.paired.difference_interval)

    @property
    def few(self) -> bool:
        return self.paired.n < FEW_STATES

    @property
    def up(self) -> int:
        """States the version's words failed and the candidate's pass."""
        return self.paired.better

    @property
    def down(self) -> int:
        """States the version's words passed and the candidate's fail."""
        return self.paired.worse

    def few_words(self) -> str:
        """Why the proof rests on few states, in words; "" when it does not."""
        if not self.few:
            return ""
        if self.paired.n == 0:
            return (
                "no held-out state gave a pair: nothing is proven. Label held-out states "
                "(or raise the set's held-out share) and prove again."
            )
        return (
            f"only {stats.plural(self.paired.n, 'held-out state')}, fewer than {FEW_STATES}: "
            "the interval is wide and a real difference can stay unproven. Label more states "
            "(or raise the set's held-out share) before trusting either way."
        )

    def floor_words(self) -> str:
        """The candidate's shuffled floor and whether its pass rate stands clearly above it."""
        q = self.floor
        if q is None or not q.varied:
            return "no shuffled floor: only a choice's descriptions are shuffled"
        if q.floor is None:
            return "no shuffled floor: no shuffled answer was checked"
        said = stats.rate_words(q.floor_passed, q.floor_checked)
        if q.no_signal:
            return f"{said}: not clearly above it — {controls.NO_SIGNAL}"
        return f"{said}: the candidate is clearly above it"

    def as_json(self) -> dict[str, Any]:
        p = self.paired
        interval = p.difference_interval
        q = self.floor
        return {
            "type": self.qtype,
            "verdict": self.verdict,
            "n": p.n,
            "version": _rate_json(p.passed_before, p.n),
            "candidate": _rate_json(p.passed_after, p.n),
            "difference": p.difference,
            "difference_interval": list(interval) if interval else None,
            "up": self.up,
            "down": self.down,
            "mcnemar_p": p.p_value,
            "unpaired": self.unpaired,
            "few_states": self.few,
            "few_states_words": self.few_words(),
            "shuffled_floor": None
            if q is None or not q.varied
            else {
                "floor": q.floor,
                "floor_interval": stats.interval_list(q.floor_passed, q.floor_checked),
                "floor_checked": q.floor_checked,
                "real_pass_rate": q.real_pass_rate,
                "real_checked": q.real_checked,
                "no_signal": q.no_signal,
            },
        }


def _rate_json(passed: int, n: int) -> dict[str, Any]:
    return {
        "passed": passed,
        "pass_rate": round(passed / n, stats.PLACES) if n else None,
        "pass_rate_interval": stats.interval_list(passed, n),
        "words": stats.rate_words(passed, n),
    }


def _passed(qtype: str, answer: Mapping[str, Any] | None, expected: Any, threshold: float):
    if answer is None or answer.get("type") != qtype:
        return None
    return metrics.passes(qtype, answer, expected, threshold)


def judge(
    changed: Sequence[str],
    before: Mapping[str, spec.Question],
    after: Mapping[str, spec.Question],
    asked: Iterable[Asked],
    threshold: float = NOUL_THRESHOLD,
) -> dict[str, QuestionProof]:
    """Per changed question: the pairs of its held-out states (an expected answer that fits
    both wordings' types, both calls answered), the paired verdict on them, and the candidate's
    shuffled floor."""
    asked = list(asked)
    out = {}
    for qid in changed:
        was, now = before[qid].type, after[qid].type
        pairs, unpaired = [], 0
        for a in asked:
            wanted = a.expected.get(qid)
            if not (metrics.expected_fits(was, wanted) and metrics.expected_fits(now, wanted)):
                continue
            old = _passed(was, (a.before or {}).get(qid), wanted, threshold)
            new = _passed(now, (a.after or {}).get(qid), wanted, threshold)
            if old is None or new is None:
                unpaired += 1
            else:
                pairs.append((old, new))
        out[qid] = QuestionProof(qid, now, stats.paired(pairs), unpaired=unpaired)
    floors = controls.control_report(
        controls.SHUFFLE, {qid: after[qid].type for qid in changed}, _variants(asked), threshold
    )
    for qid, proof in out.items():
        proof.floor = floors.get(qid)
    return out


def _variants(asked: Iterable[Asked]) -> list[controls.Answered]:
    """The candidate's answers as a shuffle control reads them: variant 0 its own words,
    variant k its k-th shuffle."""
    found = []
    for a in asked:
        for variant, answers in enumerate([a.after, *a.shuffled]):
            if answers is not None:
                found.append(controls.Answered(a.state, variant, answers, a.expected))
    return found


@dataclass
class Proof:
    """What a proof found: per changed question its verdict, and what was left out."""

    questions: dict[str, QuestionProof]
    changes: Changes
    states: int
    calls: int
    failed_calls: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return overall(q.verdict for q in self.questions.values())
