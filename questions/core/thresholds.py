"""Advisory thresholds (pure Python): precision, recall and coverage of a threshold on a noul's
P(true) or a choice's confidence over labelled cases, the curve over every step, and a threshold
chosen on some states and checked on the others held out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from questions.core import stats
from questions.core.metrics import Case

#: the thresholds a curve is drawn at: 0.00, 0.05, … 1.00
CURVE_STEPS = 21


@dataclass(frozen=True)
class CurvePoint:
    """What an advisory threshold would do over a run's labelled answers. For a noul: the
    answers read true (p ≥ t) — precision among them, recall of the expected-true, coverage the
    share read true. For a choice: the answers kept (confidence ≥ t; below, the application
    falls back) — precision the share of them that are right, recall the share of all labelled
    answers that are kept and right, coverage the share kept."""

    threshold: float
    precision: float | None  # None: nothing kept (or read true)
    recall: float | None  # None: nothing to recall
    coverage: float
    kept: int
    right: int = 0  # of those kept (read true), how many are right
    wanted: int = 0  # the answers recall is counted over

    @property
    def precision_interval(self) -> stats.Interval | None:
        return stats.wilson(self.right, self.kept)

    @property
    def recall_interval(self) -> stats.Interval | None:
        return stats.wilson(self.right, self.wanted)

    @property
    def precision_words(self) -> str:
        return stats.rate_words(self.right, self.kept)

    @property
    def recall_words(self) -> str:
        return stats.rate_words(self.right, self.wanted)

    @property
    def f1(self) -> float | None:
        if not self.precision or not self.recall:
            return None
        return 2 * self.precision * self.recall / (self.precision + self.recall)


def curve_point(qtype: str, cases: list[Case], threshold: float) -> CurvePoint:
    """One point of `threshold_curve` (the labelled cases of one noul or choice)."""
    labelled = [c for c in cases if c.checked]
    if qtype == "noul":
        kept = [c for c in labelled if float(c.answer["noul"]) >= threshold]
        right = sum(1 for c in kept if c.expected is True)
        wanted = sum(1 for c in labelled if c.expected is True)
    else:
        kept = [c for c in labelled if float(c.answer["confidence"]) >= threshold]
        right = sum(1 for c in kept if c.answer["choice"] == c.expected)
        wanted = len(labelled)
    return CurvePoint(
        threshold,
        right / len(kept) if kept else None,
        right / wanted if wanted else None,
        len(kept) / len(labelled) if labelled else 0.0,
        len(kept),
        right,
        wanted,
    )


def threshold_curve(qtype: str, cases: list[Case]) -> list[CurvePoint]:
    """Precision, recall and coverage at thresholds 0, 0.05, … 1 over the labelled cases of one
    noul (threshold on P(true)) or choice (minimum confidence)."""
    return [curve_point(qtype, cases, i / (CURVE_STEPS - 1)) for i in range(CURVE_STEPS)]


#: one labelled state in HOLD_OUT_EVERY is held out from choosing a threshold (by its name's hash)
HOLD_OUT_EVERY = 3


def held_out(state: str) -> bool:
    """Whether a state is held out of choosing a threshold: a deterministic split by the
    SHA-256 of its name, the same on every machine and run (about one state in three)."""
    digest = hashlib.sha256(state.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % HOLD_OUT_EVERY == 0


@dataclass(frozen=True)
class HeldOutChoice:
    """A threshold chosen on part of the labelled states and read on the others: `chosen`
    (None with nothing to choose on) is the threshold of best F1 over the choosing part (the
    lowest of equals); `check` is what it does on the held-out part, whose precision and recall
    carry 95 % intervals: the range they would hold in on states like these."""

    choosing: int  # labelled answers it was chosen on
    holding: int  # labelled answers held out
    chosen: float | None
    check: CurvePoint | None


def choose_threshold(qtype: str, cases: list[Case]) -> HeldOutChoice:
    """Choose a threshold for one noul or choice on the labelled cases not `held_out`, at the
    curve's steps, and read it on the held-out cases."""
    labelled = [c for c in cases if c.checked]
    holding = [c for c in labelled if held_out(c.state)]
    choosing = [c for c in labelled if not held_out(c.state)]
    best: CurvePoint | None = None
    for point in threshold_curve(qtype, choosing):
        if point.f1 is not None and (best is None or point.f1 > best.f1):
            best = point
    if best is None or not holding:
        return HeldOutChoice(len(choosing), len(holding), best and best.threshold, None)
    return HeldOutChoice(
        len(choosing), len(holding), best.threshold, curve_point(qtype, holding, best.threshold)
    )
