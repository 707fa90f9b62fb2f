"""The backends: one module per wire, plus `recorded`, behind one interface.

backend = backends.get("typesafe")
outcome = backend.ask(Ask(questions, state, model))   # never raises for a provider's fault
outcome = await backend.aask(ask, client)              # the same on an asyncio loop (HTTP wires)

An HTTP wire is a `Wire` (base.py) behind an `_HttpBackend` (http.py): `ask` and `aask` share
its pure steps (request bytes, error table, answer checks, scrubbing: redaction.py) and one
transport, httpx through the clients of clients.py, so a wire added to `LIVE` serves single
asks and the batch engine alike.

`custom` (custom.py) is your own function, `DECISIONS__CUSTOM_BACKEND=package.module:function`,
live like the wires but asked in process, with no `aask` (a batch run asks it in its thread).

`recorded:<wire>` replays what one live backend answered (`recorded` alone: `recorded:typesafe`).
"""

from __future__ import annotations

from questions.engine.backends.base import (
    FROM_THE_PROVIDER,
    Ask,
    Backend,
    DecisionError,
    Outcome,
    encoded_questions,
)
from questions.engine.backends.http import LIVE
from questions.engine.backends.recorded import DEFAULT_SOURCE, RecordedBackend

#: the backend a run asks unless told otherwise (the run form's, the command line's): the one
#: whose latest run a scorecard reads
DEFAULT = DEFAULT_SOURCE

#: every name `get` knows: the live wires, then their replays (`recorded` is typesafe's)
NAMES = (*LIVE, *(RecordedBackend(source).name for source in LIVE))


def get(name: str) -> Backend:
    """The backend of a name; `recorded:typesafe` is also accepted for `recorded`."""
    if name in LIVE:
        return LIVE[name]()
    head, _, source = name.partition(":")
    if head == "recorded" and (source or DEFAULT_SOURCE) in LIVE:
        return RecordedBackend(source or DEFAULT_SOURCE)
    raise DecisionError(422, f"Unknown backend {name!r}; one of {', '.join(NAMES)}.")


def calibrated(name: str) -> bool:
    """Whether decisions through backend `name` (a run's, a column's, a recording's) carry a
    calibrated distribution: False for `llm` and its replay (seed 001); True for a name no
    longer known, as nothing says otherwise."""
    try:
        return get(name).calibrated
    except DecisionError:
        return True


def answers_from(name: str) -> str:
    """What decisions through backend `name` come from, as a page says it: "a chat model"
    (`llm`), "your own rules" (`custom`), "the provider" (a name no longer known too)."""
    try:
        return get(name).answers_from
    except DecisionError:
        return FROM_THE_PROVIDER


def available() -> list[Backend]:
    """The live backends that are configured, then the replay of each live wire (always
    there; `recorded` replays typesafe)."""
    live = [b for b in (cls() for cls in LIVE.values()) if b.configured()]
    return [*live, *(RecordedBackend(source) for source in LIVE)]


__all__ = [
    "DEFAULT",
    "LIVE",
    "NAMES",
    "Ask",
    "Backend",
    "DecisionError",
    "Outcome",
    "answers_from",
    "available",
    "calibrated",
    "encoded_questions",
    "get",
]
