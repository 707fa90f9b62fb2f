"""The held-out split: which of a set's sample states a proof judges a suggested wording on,
and which are left to draft from (pure Python, no Django).

A state's side is decided from its own id, seeded by its set's: the SHA-256 of "set:state"
read as a fraction of [0, 1), held out when it falls below the set's share. So the split is the
same on every machine and every run, no state changes side as others are added or deleted (nor
when it is edited or relabelled), and raising the share only moves states from training into
the held-out side, never back. Seen from outside the split is as good as random: no name, tag
or label decides it, so nobody can steer a state to the side that flatters a wording.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

#: the share of a set's states held out, in whole percent, unless a reviewer says otherwise
DEFAULT_SHARE = 30
#: the shares a set may have: some states must be left on each side
LEAST_SHARE, MOST_SHARE = 10, 90

HELD_OUT = "held out"
TRAINING = "training"


def position(set_id: int, state_id: int) -> float:
    """Where a state falls in [0, 1): the first 8 bytes of SHA-256("set:state")."""
    digest = hashlib.sha256(f"{set_id}:{state_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def held_out(set_id: int, state_id: int, share: int) -> bool:
    """Whether the state is on the held-out side of its set's split at `share` percent."""
    return position(set_id, state_id) < share / 100


def side(set_id: int, state_id: int, share: int) -> str:
    """`HELD_OUT` or `TRAINING`, as a page and a command say it."""
    return HELD_OUT if held_out(set_id, state_id, share) else TRAINING


def share_refusal(share: object) -> str | None:
    """Why `share` is no held-out share (None when it is one): a whole percent from
    LEAST_SHARE to MOST_SHARE."""
    if isinstance(share, bool) or not isinstance(share, int):
        return f"The held-out share is a whole percent, not {str(share)[:20]!r}."
    if not LEAST_SHARE <= share <= MOST_SHARE:
        return (
            f"The held-out share is {LEAST_SHARE} to {MOST_SHARE} percent (some states must "
            f"be left on each side), not {share}."
        )
    return None


@dataclass(frozen=True)
class Split:
    """A set's split in numbers: its states and its labelled states (those with an expected
    answer), each counted on both sides."""

    share: int
    held_out: int
    training: int
    labelled_held_out: int
    labelled_training: int

    @property
    def states(self) -> int:
        return self.held_out + self.training

    def words(self) -> str:
        """ "12 of 40 states held out (30 %), 9 of them labelled; 28 for drafting, 20 labelled"."""
        return (
            f"{self.held_out} of {self.states} states held out ({self.share} %), "
            f"{self.labelled_held_out} of them labelled; {self.training} for drafting, "
            f"{self.labelled_training} labelled"
        )

    def as_json(self) -> dict[str, int]:
        return {
            "share": self.share,
            "states": self.states,
            "held_out": self.held_out,
            "training": self.training,
            "labelled_held_out": self.labelled_held_out,
            "labelled_training": self.labelled_training,
        }


def split(set_id: int, share: int, states: Iterable[int], labelled: Iterable[int]) -> Split:
    """The split of a set's `states` (ids), with those of them `labelled`."""
    states, labelled = set(states), set(labelled)
    out = {s for s in states if held_out(set_id, s, share)}
    return Split(
        share=share,
        held_out=len(out),
        training=len(states) - len(out),
        labelled_held_out=len(out & labelled),
        labelled_training=len((states - out) & labelled),
    )
