"""The `llm` wire, as pure functions: the same typed questions asked of a general chat model
through an OpenAI-compatible `POST {LLM_BASE_URL}/chat/completions`, with a JSON-schema response
format built from the question set, and the reply shaped like a native answer.

Nothing here does I/O: `request_body` builds what goes on the wire, `native_reply` turns what
came back into the native `{"model", "answers", "usage", "calibrated"}` body that
`answers.check_response` checks like any other wire's. The transport is the shared `Wire`.

What the model sees
-------------------
A system message saying how to answer, and a user message that is JSON: `{"state", "questions"}`
where the questions are the author's, each under a positional key `q1`, `q2`, … in declared
order. Question ids are addressing, never content (seed 001): they never reach the model, so two
sets that differ only in their ids send the same bytes. Option names are content (the native
wires send them too) and name the properties of a choice's `probabilities`.

What comes back, and how it is shaped
-------------------------------------
- noul: `probability_true` → `{"type": "noul", "noul": p}`.
- choice: `choice`, `probabilities` (every option), `confidence` → the native choice answer.
- score: `probabilities` (every level, `"0"`…) and `confidence` → the native score answer, whose
  `score` is the mean level of the stated distribution (Σ i·p_i / Σ p_i, two decimals) and whose
  `legend` is each level's description.
Probabilities are kept as the model states them, never normalised: a distribution that does not
sum to one is flagged (`sum`), not refused, since a chat model is not calibrated. A reply that
breaks the schema — not JSON, a question unanswered, an undeclared option, a number outside
0..1 — is refused as the provider answering in an unexpected shape (a 502), naming the question.
Every decision from this wire carries `calibrated: false` (seed 001: the probabilities are the
model's words, not a calibrated distribution).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from questions.core import answers, spec

CALIBRATED: Final = False
#: the answer checks that refuse on this wire: the schema's shape and its option keys; sums and
#: the weighted score are flags (a chat model states probabilities, it does not compute them)
RULES: Final = answers.Rule.SHAPE | answers.Rule.OPTIONS
SCHEMA_NAME: Final = "decision"

SYSTEM_PROMPT: Final = (
    "You answer typed questions about a state, each on its own: one answer is never context "
    "for another. The user message is JSON with `state` and `questions`; each question has a "
    "`type`, optional `instructions`, and `criteria`: a choice's options by name with their "
    "descriptions, a score's levels in order (level 0 first), a noul's descriptions of the "
    "true and the false case. Answer with one JSON object that matches the response schema "
    "and nothing else. For a noul give `probability_true` (0 to 1). For a choice give "
    "`probabilities` for every option (together 1), the `choice` you pick and your "
    "`confidence` (0 to 1). For a score give `probabilities` for every level by its number "
    "(together 1) and your `confidence` (0 to 1). State each probability as you believe it."
)


def positions(questions: Mapping[str, spec.Question]) -> dict[str, str]:
    """Question id → the positional key the model sees (`q1`, `q2`, … in declared order)."""
    return {qid: f"q{i}" for i, qid in enumerate(questions, 1)}


def _unit() -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def question_schema(question: spec.Question) -> dict[str, Any]:
    """The JSON Schema of one question's reply."""
    if question.type == "noul":
        return _closed({"probability_true": _unit()})
    if question.type == "choice":
        names = question.option_names
        return _closed(
            {
                "choice": {"type": "string", "enum": names},
                "probabilities": _closed({name: _unit() for name in names}),
                "confidence": _unit(),
            }
        )
    levels = [str(i) for i in range(question.level_count)]
    return _closed(
        {"probabilities": _closed({level: _unit() for level in levels}), "confidence": _unit()}
    )


def response_schema(questions: Mapping[str, spec.Question]) -> dict[str, Any]:
    """The reply's JSON Schema: one closed object per question under its positional key."""
    keys = positions(questions)
    return _closed({keys[qid]: question_schema(q) for qid, q in questions.items()})


def request_body(questions: Mapping[str, spec.Question], state: Any, model: str) -> dict[str, Any]:
    """The chat completions body: the system prompt, the state and the positional questions as
    JSON in the user message (author's order, as on every wire), and the response format."""
    keys = positions(questions)
    content = spec.wire_json(
        {"state": state, "questions": {keys[qid]: q.to_json() for qid, q in questions.items()}}
    ).decode("utf-8")
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": content},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": SCHEMA_NAME,
                "strict": True,
                "schema": response_schema(questions),
            },
        },
        "temperature": 0,
    }


def read_request(body: Any) -> tuple[Any, dict[str, Any]]:
    """(state, positional questions) from a request `request_body` built: what a stand-in reads.
    Raises `ValueError` naming what is missing."""
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        raise ValueError("the body has no messages")
    users = [m for m in body["messages"] if isinstance(m, Mapping) and m.get("role") == "user"]
    if not users or not isinstance(users[-1].get("content"), str):
        raise ValueError("there is no user message")
    try:
        content = spec.loads(users[-1]["content"])
    except spec.JSONTextError as exc:
        raise ValueError("the user message is not JSON") from exc
    if not isinstance(content, Mapping) or "state" not in content:
        raise ValueError("the user message has no state")
    if not isinstance(content.get("questions"), Mapping):
        raise ValueError("the user message has no questions")
    return content["state"], dict(content["questions"])


def reply_from_native(native: Mapping[str, Any]) -> dict[str, Any]:
    """A native answer as this wire's schema asks for it (what a stand-in answers)."""
    if native["type"] == "noul":
        return {"probability_true": native["noul"]}
    if native["type"] == "choice":
        return {
            "choice": native["choice"],
            "probabilities": native["probabilities"],
            "confidence": native["confidence"],
        }
    return {"probabilities": native["probabilities"], "confidence": native["confidence"]}


# --- the reply -----------------------------------------------------------------------------------


def _content(reply: Any) -> Any:
    """The model's JSON object from a chat completion, or `AnswerError` saying why not."""
    if not isinstance(reply, Mapping):
        raise answers.AnswerError([(None, f"the reply is {spec.describe(reply)}, not an object")])
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise answers.AnswerError([(None, "the reply has no choices")])
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise answers.AnswerError([(None, "the reply's first choice has no message")])
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        raise answers.AnswerError([(None, "the model refused to answer")])
    content = message.get("content")
    if not isinstance(content, str):
        raise answers.AnswerError([(None, "the model's message has no text content")])
    if choices[0].get("finish_reason") == "length":
        raise answers.AnswerError([(None, "the model's reply was cut off (finish_reason length)")])
    try:
        return spec.loads(content)
    except spec.JSONTextError as exc:
        raise answers.AnswerError([(None, "the model's reply is not JSON")]) from exc


def _shaped(question: spec.Question, raw: Any, problems: list) -> dict[str, Any] | None:
    """One question's reply as a native answer; what the schema refuses goes to `problems`."""
    qid = question.id
    if not isinstance(raw, Mapping):
        problems.append((qid, f"`{qid}`: the reply must be an object; got {spec.describe(raw)}"))
        return None
    wanted = question_schema(question)["required"]
    missing = [k for k in wanted if k not in raw]
    extra = [k for k in raw if k not in wanted]
    if missing or extra:
        said = "lacks " + ", ".join(missing) if missing else "adds " + ", ".join(extra)
        problems.append((qid, f"{question.type} `{qid}`: the reply {said} (the schema forbids it)"))
        return None
    if question.type == "noul":
        return {"type": "noul", "noul": raw["probability_true"]}
    if question.type == "choice":
        return {
            "type": "choice",
            "choice": raw["choice"],
            "probabilities": raw["probabilities"],
            "confidence": raw["confidence"],
        }
    probabilities = raw["probabilities"]
    out = {
        "type": "score",
        "score": _mean_level(probabilities, question.level_count),
        "probabilities": probabilities,
        "legend": {
            str(i): spec.entry_text(e) or f"level {i}" for i, e in enumerate(question.criteria)
        },
        "confidence": raw["confidence"],
    }
    return out


def _mean_level(probabilities: Any, levels: int) -> Any:
    """Σ i·p_i / Σ p_i over the stated levels, two decimals; what cannot be weighed is handed on
    as it is, for the answer checks to name."""
    if not isinstance(probabilities, Mapping):
        return None
    stated = [(i, probabilities.get(str(i))) for i in range(levels)]
    if not all(answers.is_number(p) and 0 <= p <= 1 for _, p in stated):
        return 0
    total = sum(p for _, p in stated)
    if total <= 0:
        return 0
    return round(sum(i * p for i, p in stated) / total, 2)


def native_reply(questions: Mapping[str, spec.Question], reply: Any) -> dict[str, Any]:
    """A chat completion as the native body `answers.check_response` reads: answers keyed by the
    asked ids, the model that answered, usage in input/output tokens (and a reported cost), and
    `calibrated: false`. Raises `AnswerError` when the reply breaks the schema."""
    content = _content(reply)
    if not isinstance(content, Mapping):
        raise answers.AnswerError(
            [(None, f"the model's reply is {spec.describe(content)}, not an object")]
        )
    keys = positions(questions)
    problems: list[tuple[str | None, str]] = []
    shaped: dict[str, Any] = {}
    for qid, question in questions.items():
        if keys[qid] not in content:
            problems.append((qid, f"{question.type} `{qid}` has no answer"))
            continue
        one = _shaped(question, content[keys[qid]], problems)
        if one is not None:
            shaped[qid] = one
    unknown = [k for k in content if k not in keys.values()]
    if unknown:
        problems.append((None, f"the reply answers questions never asked: {', '.join(unknown)}"))
    if problems:
        raise answers.AnswerError(problems)
    body: dict[str, Any] = {"model": reply.get("model"), "answers": shaped}
    usage = reply.get("usage")
    if isinstance(usage, Mapping):
        body["usage"] = {
            k: v
            for k, v in (
                ("input_tokens", usage.get("prompt_tokens")),
                ("output_tokens", usage.get("completion_tokens")),
                ("cost", usage.get("cost")),
            )
            if v is not None
        }
    if isinstance(reply.get("id"), str):
        body["id"] = reply["id"]
    body["calibrated"] = CALIBRATED
    return body
