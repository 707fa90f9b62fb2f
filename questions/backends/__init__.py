"""The backends (DESIGN.md §3): one module per wire, plus `recorded`, behind one interface.

backend = backends.get("typesafe")
outcome = backend.ask(Ask(questions, state, model))   # never raises for a provider's fault
"""

from __future__ import annotations

from questions.backends.base import Ask, Backend, DecisionError, Outcome
from questions.backends.http import OpenRouterBackend, RuntimeBackend, TypeSafeBackend
from questions.backends.recorded import RecordedBackend

BACKENDS: dict[str, type] = {
    "typesafe": TypeSafeBackend,
    "runtime": RuntimeBackend,
    "openrouter": OpenRouterBackend,
    "recorded": RecordedBackend,
}
NAMES = tuple(BACKENDS)


def get(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        raise DecisionError(422, f"Unknown backend {name!r}; one of {', '.join(NAMES)}.") from None


def available() -> list[Backend]:
    """The live backends that are configured, then `recorded` (always there)."""
    return [b for b in (cls() for cls in BACKENDS.values()) if not b.live or b.configured()]


__all__ = ["NAMES", "Ask", "Backend", "DecisionError", "Outcome", "available", "get"]
