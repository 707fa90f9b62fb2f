"""The four live wires: TypeSafe's `POST /v1/systemone`, the runtime's `POST /api/decisions`,
OpenRouter's `POST /alpha/decisions`, and any chat model's `POST /chat/completions` (`llm`, its
request and reply in `llm.py`). Each is a row of settings names — where its base URL, its
secret and its price are, the path it posts to — and `_HttpBackend.wire` builds every `Wire`
from that row when asked, so a test can point it at a loopback server."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import httpx
from django.conf import settings

from questions.core import answers, spec
from questions.engine.backends import llm
from questions.engine.backends.base import (
    FROM_THE_PROVIDER,
    PROVIDER_DETAIL_LIMIT,
    Ask,
    DecisionError,
    Outcome,
    Wire,
    mapping_for,
)
from questions.engine.backends.custom import CustomBackend


class _HttpBackend:
    name = ""
    live = True
    needs = ""  # the variables to set, for the 503
    rules = answers.GATEWAY  # the answer checks that refuse on this wire
    calibrated = True  # False: its probabilities are a model's words (seed 001)
    answers_from = FROM_THE_PROVIDER  # what its answers come from, as a page says it
    # the wire's row: the settings that hold its base URL, its secret and its price; its path
    base_setting = ""
    secret_setting = ""
    price_setting = "DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS"
    path = ""
    request_id_header = "x-request-id"
    body_keys = Wire.body_keys
    wire_class = Wire

    def configured(self) -> bool:
        return bool(getattr(settings, self.secret_setting) and getattr(settings, self.base_setting))

    def missing_configuration(self) -> str:
        return f"Decisions through {self.name} need {self.needs} in the console's environment."

    def default_model(self) -> str:
        return settings.DECISIONS_MODEL

    def wire(self) -> Wire:
        """The wire as the settings say now: the one place a `Wire` is built."""
        return self.wire_class(
            name=self.name,
            url=f"{getattr(settings, self.base_setting)}{self.path}",
            secret=getattr(settings, self.secret_setting),
            timeout=settings.DECISIONS_TIMEOUT_SECONDS,
            price_per_million=getattr(settings, self.price_setting),
            request_id_header=self.request_id_header,
            body_keys=self.body_keys,
            rules=self.rules,
            calibrated=self.calibrated,
            answer_max_bytes=settings.DECISIONS_ANSWER_MAX_BYTES,
        )

    def ask(self, ask: Ask) -> Outcome:
        started = time.perf_counter()
        if not self.configured():
            return self._not_configured(ask)
        refused = self.refused_by_schema(ask)
        if refused is not None:
            return refused
        return self.wire().call(ask, started)

    async def aask(self, ask: Ask, client: httpx.AsyncClient) -> Outcome:
        """`ask` on an asyncio loop, through the caller's client (a batch slot's)."""
        started = time.perf_counter()
        if not self.configured():
            return self._not_configured(ask)
        refused = self.refused_by_schema(ask)
        if refused is not None:
            return refused
        return await self.wire().acall(ask, started, client)

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


class TypeSafeBackend(_HttpBackend):
    name = "typesafe"
    base_setting, secret_setting, path = "TYPESAFE_BASE_URL", "TYPESAFE_API_KEY", "/v1/systemone"
    request_id_header = "x-typesafe-request-id"

    @property
    def needs(self) -> str:
        return settings.DECISIONS_API_KEY_ENV


class RuntimeBackend(_HttpBackend):
    name = "runtime"
    needs = "RUNTIME_URL and RUNTIME_TOKEN"
    rules = answers.RUNTIME  # the runtime passes on what its own checks (seed 000) accept
    base_setting, secret_setting, path = "RUNTIME_URL", "RUNTIME_TOKEN", "/api/decisions"
    body_keys = ("state", "questions")  # the runtime holds the provider and its model


class OpenRouterBackend(_HttpBackend):
    name = "openrouter"
    needs = "OPENROUTER_API_KEY"
    base_setting, secret_setting = "OPENROUTER_BASE_URL", "OPENROUTER_API_KEY"
    path = "/alpha/decisions"

    def default_model(self) -> str:
        return settings.OPENROUTER_MODEL


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
    answers_from = "a chat model"
    base_setting, secret_setting, path = "LLM_BASE_URL", "LLM_API_KEY", "/chat/completions"
    price_setting = "LLM_PRICE_PER_MILLION_INPUT_TOKENS"
    wire_class = ChatWire

    def default_model(self) -> str:
        return settings.LLM_MODEL


#: The live backends by name: the four wires, and your own function (`custom`, custom.py).
LIVE: dict[str, type[_HttpBackend] | type[CustomBackend]] = {
    b.name: b
    for b in (TypeSafeBackend, RuntimeBackend, OpenRouterBackend, LlmBackend, CustomBackend)
}
