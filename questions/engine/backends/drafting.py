"""Drafting rewordings through the `llm` wire: a chat model asked for `count` rewordings of one
question, answering in a JSON-schema response format keyed by the question's own ids
(`questions.core.rewording`), so nothing but its words can change.

The request is the `llm` wire's — `POST {LLM_BASE_URL}/chat/completions` with the key as a
bearer token, through the shared transport (`clients.exchange`: one deadline, the answer read to
at most `ANSWER_MAX_BYTES`), its failures mapped by the one error table (`base.ERROR_TABLE`)
and scrubbed of the key and of the states' strings — with a user message of its own:

    {"question": {type, instructions, criteria}, "rewordable": {instructions?, criteria},
     "failing": [{name, state, expected, answered, evidence: [{part, words, delta, says}]}],
     "passing": [{state, expected}], "candidates": K}

The question's id is addressing, never content: it is not sent. The reply's message is read
like the decisions' (`llm._content`: a refusal, a cut-off or text that is not JSON is refused)
and each candidate checked against its schema and bounds (`rewording.read_reply`); a
candidate's reason quoting a state it was sent has the quote taken out. Nothing is recorded
here: the request holds the states, which live in their sample states only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from questions.core import answers, rewording, spec
from questions.engine.backends import clients, llm
from questions.engine.backends.base import Ask, DecisionError, Outcome
from questions.engine.backends.http import LlmBackend
from questions.engine.backends.redaction import scrub, state_strings

#: the response format's name: how the stand-in tells a drafting request from a decision's
SCHEMA_NAME: Final = "rewordings"
#: the most bytes of a drafting answer read (decoded): K candidates of bounded texts fit well
ANSWER_MAX_BYTES: Final = 256 * 1024
#: a drafting call may take longer than a decision's: it writes
TIMEOUT_FACTOR: Final = 3

SYSTEM_PROMPT: Final = (
    "You improve the wording of one typed question that a decision model answers about a "
    "state. The user message is JSON: the `question` (its `type`, `instructions` and "
    "`criteria`: a choice's options by name, a score's levels in order, a noul's true and "
    "false cases), the `rewordable` words (the instructions' text and each description you "
    "may reword, by the question's own keys), the `failing` states the model answered wrong "
    "(what each expected, what it answered, and the evidence: which parts of the question "
    "moved the wrong answer when left out, with the change), and `passing` states that must "
    "stay right. Write `candidates` different rewordings, `c1`, `c2`, …: each gives every "
    "rewordable text (unchanged where it should stay) and `why`, one sentence. Describe each "
    "option by what it means and when it applies, in words a state would share with it; "
    "never name a state, never add or rename an option. Answer with one JSON object that "
    "matches the response schema and nothing else."
)


def says(failing: rewording.Failing, finding: rewording.Finding) -> dict[str, Any]:
    return {**finding.as_json(), "says": rewording.evidence_words(failing, finding)}


def request_body(
    question: spec.Question,
    failing: Sequence[rewording.Failing],
    passing: Sequence[Mapping[str, Any]],
    count: int,
    model: str,
) -> dict[str, Any]:
    """The chat completions body that asks for `count` rewordings of `question`."""
    content = {
        "question": question.to_json(),
        "rewordable": rewording.slots(question).as_json(),
        "failing": [
            {
                **{k: v for k, v in f.as_json().items() if k != "evidence"},
                "evidence": [says(f, e) for e in f.evidence],
            }
            for f in failing
        ],
        "passing": [dict(p) for p in passing],
        "candidates": count,
    }
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": spec.wire_json(content).decode("utf-8")},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": SCHEMA_NAME,
                "strict": True,
                "schema": rewording.reply_schema(question, count),
            },
        },
        "temperature": 0.7,
    }


def is_drafting(body: Any) -> bool:
    """Whether a chat completions body asks for rewordings (what a stand-in answers so)."""
    if not isinstance(body, Mapping):
        return False
    answer_format = body.get("response_format")
    schema = answer_format.get("json_schema") if isinstance(answer_format, Mapping) else None
    return isinstance(schema, Mapping) and schema.get("name") == SCHEMA_NAME


def read_request(body: Any) -> dict[str, Any]:
    """The user message of a drafting request (what a stand-in reads); `ValueError` naming what
    is missing."""
    users = [
        m
        for m in (body.get("messages") if isinstance(body, Mapping) else None) or []
        if isinstance(m, Mapping) and m.get("role") == "user"
    ]
    if not users or not isinstance(users[-1].get("content"), str):
        raise ValueError("there is no user message")
    try:
        content = spec.loads(users[-1]["content"])
    except spec.JSONTextError as exc:
        raise ValueError("the user message is not JSON") from exc
    if not isinstance(content, Mapping):
        raise ValueError("the user message is not an object")
    for key, kind in (("question", Mapping), ("failing", list), ("candidates", int)):
        if not isinstance(content.get(key), kind):
            raise ValueError(f"the user message has no {key}")
    return dict(content)


@dataclass
class Draft:
    """What a drafting call gave: the candidates (each checked), the model that answered, the
    tokens and the cost; or `error`, mapped like a decision's."""

    candidates: list[rewording.Drafted] = field(default_factory=list)
    model: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    cost: float | None = None
    error: DecisionError | None = None
    total_ms: float = 0.0


def estimated_tokens(body: Mapping[str, Any]) -> int:
    """About how many input tokens a body is: a token is about four bytes of text."""
    return max(1, len(spec.wire_json(body)) // 4)


def price_per_million() -> float | None:
    return LlmBackend().wire().price_per_million


def configured() -> str:
    """Why drafting cannot go out ("" when it can): the `llm` wire's configuration."""
    backend = LlmBackend()
    return "" if backend.configured() else backend.missing_configuration()


def default_model() -> str:
    return LlmBackend().default_model()


def draft(
    question: spec.Question,
    failing: Sequence[rewording.Failing],
    passing: Sequence[Mapping[str, Any]],
    count: int,
    model: str,
) -> Draft:
    """Ask the `llm` wire for `count` rewordings of `question`. Never raises for anything a
    provider sends: a failure is the `Draft`'s `error`, without the key or a state's words."""
    started = time.perf_counter()
    backend = LlmBackend()
    if not backend.configured():
        return Draft(error=DecisionError(503, backend.missing_configuration()))
    wire = backend.wire()
    body = request_body(question, failing, passing, count, model)
    payload = spec.wire_json(body)
    headers = {
        "Authorization": f"Bearer {wire.secret}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    # what the error mapping scrubs from a provider's words: every state the request holds
    states = [f.state for f in failing] + [p.get("state") for p in passing]
    ask = Ask(questions={}, state=states, model=model)
    outcome = Outcome(backend=wire.name, model_asked=model, calibrated=False)
    sent = time.perf_counter()
    try:
        response, raw = clients.exchange(
            wire.name,
            wire.url,
            payload,
            headers,
            wire.timeout * TIMEOUT_FACTOR,
            ANSWER_MAX_BYTES,
        )
    except Exception as exc:
        failed = wire.failed_exchange(outcome, exc, sent, started)
        return Draft(error=failed.error, total_ms=failed.total_ms)
    if response.status_code != 200:
        text = scrub(raw.decode("utf-8", errors="replace"), wire.secret)
        try:
            parsed = spec.loads(raw)
        except spec.JSONTextError:
            parsed = None
        failed = wire._provider_error(outcome, response, parsed, text, ask, started)
        return Draft(error=failed.error, total_ms=failed.total_ms)
    found = _read(question, count, raw, wire.price_per_million, started)
    for candidate in found.candidates:  # a model's reason is no place for a state's words
        for piece in state_strings(states):
            candidate.why = candidate.why.replace(piece, "[a state]")
    return found


def _read(
    question: spec.Question, count: int, raw: bytes, price: float | None, started: float
) -> Draft:
    """A 200 answer read: the candidates, or a 502 in words of the shape (never its text)."""
    total = (time.perf_counter() - started) * 1000
    try:
        reply = spec.loads(raw)
        content = llm._content(reply)
        candidates = rewording.read_reply(question, count, content)
    except spec.JSONTextError:
        return _shape("The provider's answer is not JSON.", total)
    except answers.AnswerError as exc:
        return _shape(exc.detail, total)
    except ValueError as exc:
        return _shape(f"The provider answered in an unexpected shape: {exc}.", total)
    usage = reply.get("usage") if isinstance(reply.get("usage"), Mapping) else {}
    tokens = {
        k: v
        for k, v in (
            ("input_tokens", usage.get("prompt_tokens")),
            ("output_tokens", usage.get("completion_tokens")),
        )
        if answers.is_number(v)
    }
    cost = usage.get("cost") if answers.is_number(usage.get("cost")) else None
    if cost is None and price is not None and "input_tokens" in tokens:
        cost = tokens["input_tokens"] * price / 1_000_000
    model = reply.get("model") if isinstance(reply.get("model"), str) else ""
    return Draft(candidates, model[:200], tokens, cost, total_ms=total)


def _shape(detail: str, total_ms: float) -> Draft:
    return Draft(
        error=DecisionError(502, detail[:500], provider_status_code=200), total_ms=total_ms
    )
