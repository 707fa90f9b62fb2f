"""`custom`: your own function as a backend (seed 001) — most often the rules an application
runs today (an `if`, a regex, an allowlist).

`DECISIONS__CUSTOM_BACKEND=package.module:function` names a callable `f(state, questions,
model)` that gets what a wire would carry (the state, the questions as their JSON by id, the
model asked; copies, so it cannot change what is recorded) and returns the provider's body,
`{"model", "answers", "usage"?}`. Its answers are checked by the gateway's rules like any wire's:
an answer that breaks one is a 502 naming the rule, an exception inside it is that state's 502
(logged by its type, never with the state or its message, which may quote the state). It is
`calibrated: false` unless its body says `"calibrated": true`, costs nothing, and its latency is
the time the function took. A setting that names no module, no function or nothing callable is
a 503 saying which, at the first ask.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from questions.core import answers, spec
from questions.engine.backends.base import Ask, DecisionError, Outcome

log = logging.getLogger("questions.backends")

NAME = "custom"
SETTING = "DECISIONS__CUSTOM_BACKEND"
#: the model a custom backend is asked for unless the caller names one: rules have none
DEFAULT_MODEL = "custom"


class SettingError(Exception):
    """DECISIONS__CUSTOM_BACKEND does not name a callable; the message says why."""


def load(path: str) -> Callable[..., Any]:
    """The callable `package.module:function` names; `SettingError` saying what is wrong."""
    module_name, colon, function = path.partition(":")
    if not colon or not module_name.strip() or not function.strip():
        raise SettingError(f"{SETTING} must read package.module:function; got {path[:100]!r}.")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as exc:  # an import that fails in any way is the setting's problem
        raise SettingError(
            f"{SETTING}: module {module_name.strip()[:100]!r} could not be imported "
            f"({type(exc).__name__})."
        ) from None
    target: Any = module
    for part in function.strip().split("."):
        if not hasattr(target, part):
            raise SettingError(
                f"{SETTING}: {module_name.strip()[:100]} has no {function.strip()[:100]!r}."
            )
        target = getattr(target, part)
    if not callable(target):
        raise SettingError(f"{SETTING}: {path.strip()[:100]} is not callable.")
    return target


class CustomBackend:
    name = NAME
    live = True  # asked now, recorded, replayable as `recorded:custom`
    rules = answers.GATEWAY
    calibrated = False  # what a column or a run shows; a body may say otherwise per call
    answers_from = "your own rules"  # DECISIONS__CUSTOM_BACKEND's function, not a model

    def configured(self) -> bool:
        return bool(settings.DECISIONS_CUSTOM_BACKEND)

    def missing_configuration(self) -> str:
        return (
            f"Decisions through {self.name} need {SETTING}=package.module:function in the "
            "console's environment."
        )

    def default_model(self) -> str:
        return DEFAULT_MODEL

    def ask(self, ask: Ask) -> Outcome:
        started = time.perf_counter()
        outcome = Outcome(backend=self.name, model_asked=ask.model, calibrated=self.calibrated)
        if not self.configured():
            return self._failed(outcome, 503, self.missing_configuration(), started)
        path = settings.DECISIONS_CUSTOM_BACKEND
        try:
            function = load(path)
        except SettingError as exc:
            return self._failed(outcome, 503, str(exc), started)
        body = {"state": ask.state, "model": ask.model, "questions": ask.questions_json}
        outcome.request_body = body
        outcome.request_text = spec.wire_json(body).decode("utf-8")
        sent = time.perf_counter()
        try:
            reply = function(copy.deepcopy(ask.state), copy.deepcopy(ask.questions_json), ask.model)
        except Exception as exc:  # the function's own failure: this state's, as a 502
            outcome.provider_ms = (time.perf_counter() - sent) * 1000
            log.warning("custom backend %s raised %s", path[:100], type(exc).__name__)
            return self._failed(
                outcome,
                502,
                f"The custom backend ({path[:100]}) raised {type(exc).__name__}; nothing was "
                "answered for this state.",
                started,
            )
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        try:
            outcome.response_text = json.dumps(reply, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            return self._failed(
                outcome,
                502,
                f"The custom backend's answer is not JSON ({type(exc).__name__}).",
                started,
            )
        try:
            outcome.checked = answers.check_response(
                ask.questions, reply, price_per_million=0, rules=self.rules
            )
        except answers.AnswerError as exc:
            shown = "; ".join(message for _, message in exc.problems[:3])
            more = f" (and {len(exc.problems) - 3} more)" if len(exc.problems) > 3 else ""
            return self._failed(
                outcome, 502, f"The custom backend's answer was rejected: {shown}{more}", started
            )
        except Exception as exc:  # whatever it returned, the call answers (a 502)
            return self._failed(
                outcome,
                502,
                f"The custom backend answered in an unexpected shape: checking it failed with "
                f"{type(exc).__name__}.",
                started,
            )
        if outcome.checked.cost is None:  # your own code costs nothing per call
            outcome.checked = dataclasses.replace(outcome.checked, cost=0.0)
        outcome.calibrated = outcome.checked.extra.get("calibrated") is True
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome

    def _failed(self, outcome: Outcome, status: int, detail: str, started: float) -> Outcome:
        """A failure is final (`live` off, so a batch run does not retry it): asking again runs
        the same code on the same state."""
        outcome.live = False
        outcome.error = DecisionError(status, detail)
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome
