"""The four live wires: TypeSafe's `POST /v1/systemone`, the runtime's `POST /api/decisions`,
OpenRouter's `POST /alpha/decisions`, and any chat model's `POST /chat/completions` (`llm`, its
request and reply in `llm.py`). Each reads its configuration from settings when asked,
so a test can point it at a loopback server."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from django.conf import settings

from questions.core import answers, spec
from questions.engine.backends import llm
from questions.engine.backends.base import (
    PROVIDER_DETAIL_LIMIT,
    Ask,
    DecisionError,
    Outcome,
    Wire,
    mapping_for,
    scrub,
)
from questions.engine.backends.custom import CustomBackend

if TYPE_CHECKING:
    from questions.engine.backends import streams


class _HttpBackend:
    name = ""
    live = True
    needs = ""  # the variables to set, for the 503
    rules = answers.GATEWAY  # the answer checks that refuse on this wire
    calibrated = True  # False: its probabilities are a model's words (seed 001)

    def configured(self) -> bool:
        raise NotImplementedError

    def missing_configuration(self) -> str:
        return f"Decisions through {self.name} need {self.needs} in the console's environment."

    def default_model(self) -> str:
        return settings.DECISIONS_MODEL

    def wire(self) -> Wire:
        raise NotImplementedError

    def ask(self, ask: Ask) -> Outcome:
        started = time.perf_counter()
        if not self.configured():
            return self._not_configured(ask)
        refused = self.refused_by_schema(ask)
        if refused is not None:
            return refused
        wire = self.wire()
        return without_secret(wire.call(ask, started), wire.secret)

    async def aask(self, ask: Ask, client: streams.Slot) -> Outcome:
        """`ask` on an asyncio loop, through the caller's slot (the batch engine's transport,
        or its client when a proxy is set)."""
        started = time.perf_counter()
        if not self.configured():
            return self._not_configured(ask)
        refused = self.refused_by_schema(ask)
        if refused is not None:
            return refused
        wire = self.wire()
        return without_secret(await wire.acall(ask, started, client), wire.secret)

    def refused_by_schema(self, ask: Ask) -> Outcome | None:
        """On a wire that carries the provider's published schema, what that schema refuses is
        answered as the provider would answer it (422, its words as `provider_detail`) without
        spending the call; None when the ask may go out."""
        if self.name not in spec.SCHEMA_WIRES:
            return None
        refusals = spec.provider_refusals(ask.questions, ask.state)
        if not refusals:
            return None
        row = mapping_for(422, self.name)
        words = "; ".join(f"{issue.path}: {issue.message}" for issue in refusals[:3])
        return Outcome(
            backend=self.name,
            model_asked=ask.model,
            live=False,
            error=DecisionError(
                row.status,
                f"{row.detail} Nothing was sent: the provider's published schema refuses it.",
                provider_detail=words[:PROVIDER_DETAIL_LIMIT],
            ),
            calibrated=self.calibrated,
        )

    def _not_configured(self, ask: Ask) -> Outcome:
        return Outcome(
            backend=self.name,
            model_asked=ask.model,
            live=False,
            error=DecisionError(503, self.missing_configuration()),
            calibrated=self.calibrated,
        )


def without_secret(outcome: Outcome, secret: str) -> Outcome:
    """A provider may echo the key in any field of an answer: the model that answered, the
    request id, the fields it adds. Each is shown and stored, so each loses the key here (the
    raw response text and the provider's words lose it on the wire)."""
    outcome.request_id = scrub(outcome.request_id, secret)
    checked = outcome.checked
    if checked is not None:
        outcome.checked = dataclasses.replace(
            checked,
            model=None if checked.model is None else scrub(checked.model, secret),
            extra=_scrub_json(checked.extra, secret),
        )
    return outcome


def _scrub_json(value: Any, secret: str) -> Any:
    """Every string in parsed JSON, keys included, without the secret; iterative, as a provider's
    JSON may nest as deep as the parser allows."""
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        container, slot = pending.pop()
        item = container[slot]
        if isinstance(item, str):
            container[slot] = scrub(item, secret)
        elif isinstance(item, dict):
            container[slot] = {scrub(k, secret): v for k, v in item.items()}
            pending.extend((container[slot], k) for k in container[slot])
        elif isinstance(item, list):
            container[slot] = list(item)
            pending.extend((container[slot], i) for i in range(len(item)))
    return root[0]


class TypeSafeBackend(_HttpBackend):
    name = "typesafe"

    @property
    def needs(self) -> str:
        return settings.DECISIONS_API_KEY_ENV

    def configured(self) -> bool:
        return bool(settings.TYPESAFE_API_KEY)

    def wire(self) -> Wire:
        return Wire(
            name=self.name,
            url=f"{settings.TYPESAFE_BASE_URL}/v1/systemone",
            secret=settings.TYPESAFE_API_KEY,
            timeout=settings.DECISIONS_TIMEOUT_SECONDS,
            price_per_million=settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS,
            request_id_header="x-typesafe-request-id",
        )


class RuntimeBackend(_HttpBackend):
    name = "runtime"
    needs = "RUNTIME_URL and RUNTIME_TOKEN"
    rules = answers.RUNTIME  # the runtime passes on what its own checks (seed 000) accept

    def configured(self) -> bool:
        return bool(settings.RUNTIME_URL and settings.RUNTIME_TOKEN)

    def wire(self) -> Wire:
        return Wire(
            name=self.name,
            url=f"{settings.RUNTIME_URL}/api/decisions",
            secret=settings.RUNTIME_TOKEN,
            timeout=settings.DECISIONS_TIMEOUT_SECONDS,
            price_per_million=settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS,
            request_id_header="x-request-id",
            body_keys=("state", "questions"),  # the runtime holds the provider and its model
            rules=self.rules,
        )


class OpenRouterBackend(_HttpBackend):
    name = "openrouter"
    needs = "OPENROUTER_API_KEY"

    def configured(self) -> bool:
        return bool(settings.OPENROUTER_API_KEY)

    def default_model(self) -> str:
        return settings.OPENROUTER_MODEL

    def wire(self) -> Wire:
        return Wire(
            name=self.name,
            url=f"{settings.OPENROUTER_BASE_URL}/alpha/decisions",
            secret=settings.OPENROUTER_API_KEY,
            timeout=settings.DECISIONS_TIMEOUT_SECONDS,
            price_per_million=settings.DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS,
            request_id_header="x-request-id",
        )


@dataclasses.dataclass
class ChatWire(Wire):
    """The `llm` wire on the shared transport: `llm.request_body` out, `llm.native_reply` in."""

    def body(self, ask: Ask) -> dict[str, Any]:
        return llm.request_body(ask.questions, ask.state, ask.model)

    def native(self, ask: Ask, parsed: Any) -> Any:
        return llm.native_reply(ask.questions, parsed)


class LlmBackend(_HttpBackend):
    name = "llm"
    needs = "LLM_API_KEY (and LLM_BASE_URL, LLM_MODEL for an endpoint other than OpenRouter)"
    rules = llm.RULES
    calibrated = llm.CALIBRATED

    def configured(self) -> bool:
        return bool(settings.LLM_API_KEY)

    def default_model(self) -> str:
        return settings.LLM_MODEL

    def wire(self) -> Wire:
        return ChatWire(
            name=self.name,
            url=f"{settings.LLM_BASE_URL}/chat/completions",
            secret=settings.LLM_API_KEY,
            timeout=settings.DECISIONS_TIMEOUT_SECONDS,
            price_per_million=settings.LLM_PRICE_PER_MILLION_INPUT_TOKENS,
            request_id_header="x-request-id",
            rules=self.rules,
            calibrated=self.calibrated,
        )


#: The live backends by name: the four wires, and your own function (`custom`, custom.py).
LIVE: dict[str, type[_HttpBackend] | type[CustomBackend]] = {
    b.name: b
    for b in (TypeSafeBackend, RuntimeBackend, OpenRouterBackend, LlmBackend, CustomBackend)
}
