"""What a state's labels settle, question by question (pure Python, no Django).

A set says how many labels a state needs (`needed`, 1–5). With one, the newest label settles
the question — the console's behaviour before labels were kept per labeller: whoever labels
last is right. With two or more:

- **settled** when `needed` labellers gave the same answer and none gave another;
- **disputed** when two labellers' answers differ (however many there are) — until a reviewer
  settles it (their answer) or marks it **ambiguous** (left out of the pass rates);
- **open** while fewer than `needed` labels agree and none differ: it asks for more.

A reviewer's settlement decides the question whatever its labels say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SETTLED, DISPUTED, AMBIGUOUS, OPEN = "settled", "disputed", "ambiguous", "open"
STATUSES = (SETTLED, DISPUTED, AMBIGUOUS, OPEN)
#: how many labels a set may ask each state for
MIN_NEEDED, MAX_NEEDED = 1, 5
#: the settlement outcomes (`LabelSettlement.Outcome`'s values)
BY_REVIEWER, MARKED_AMBIGUOUS = "settled", "ambiguous"


@dataclass(frozen=True)
class Given:
    """One labeller's current label: who (any hashable id), the answer, and when (any
    comparable: newest is greatest)."""

    labeller: Any
    answer: Any
    at: Any


@dataclass(frozen=True)
class Outcome:
    """What a question of a state is: its status and, when settled, the answer."""

    status: str
    answer: Any = None
    by_reviewer: bool = False

    @property
    def settled(self) -> bool:
        return self.status == SETTLED


def settle(
    labels: Sequence[Given], needed: int, settlement: tuple[str, Any] | None = None
) -> Outcome:
    """The outcome of one question of one state from its current labels (one per labeller),
    the number the set needs, and a reviewer's settlement (outcome, answer) if there is one."""
    if settlement is not None:
        outcome, answer = settlement
        if outcome == MARKED_AMBIGUOUS:
            return Outcome(AMBIGUOUS, by_reviewer=True)
        return Outcome(SETTLED, answer, by_reviewer=True)
    if not labels:
        return Outcome(OPEN)
    if needed <= 1:
        return Outcome(SETTLED, max(labels, key=lambda g: g.at).answer)
    answers = {_key(g.answer) for g in labels}
    if len(answers) > 1:
        return Outcome(DISPUTED)
    if len(labels) >= needed:
        return Outcome(SETTLED, labels[0].answer)
    return Outcome(OPEN)


def _key(answer: Any) -> tuple[str, Any]:
    """An answer as a set member that tells `True` from `1` (a noul's true from level 1)."""
    return (type(answer).__name__, answer)


def needed_refusal(raw: Any) -> str | None:
    """Why `raw` is not a number of labels a set may need, or None when it is one."""
    if isinstance(raw, bool) or not isinstance(raw, int) or not MIN_NEEDED <= raw <= MAX_NEEDED:
        return (
            f"A state needs {MIN_NEEDED} to {MAX_NEEDED} labels "
            f"(1: the newest label settles it), not {str(raw)[:16]!r}."
        )
    return None
