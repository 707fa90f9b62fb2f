"""The `llm` wire against real HTTP servers on loopback: the request it builds (a JSON-schema
response format, question ids never sent), the reply shaped like a native answer and marked
`calibrated: false` everywhere it is shown, every row of the error mapping, timeouts, malformed
bodies and replies that break the schema — and the key never echoed."""

from __future__ import annotations

import json
import logging

import pytest

from questions import roles, services
from questions.core import spec
from questions.dev import standin
from questions.engine import backends
from questions.engine.backends import llm
from questions.models import Decision, DecisionAnswer
from tests.providers import KEY, TIMEOUT, Provider, run_cli, stand_in_serving

pytestmark = pytest.mark.django_db

STATE = {"ticket": "Refund me, the charge was made twice."}
#: ids that appear nowhere in the words, so the request can be searched for them
DOC = {
    "zq_urgent_id": {"type": "noul", "instructions": "Does this need an answer today?"},
    "zq_desk_id": {
        "type": "choice",
        "instructions": "Which desk owns the ticket?",
        "criteria": {"billing": "money, charges, refunds", "tech": "bugs", "other": "else"},
    },
    "zq_anger_id": {
        "type": "score",
        "instructions": "How upset is the writer?",
        "criteria": ["calm", "annoyed", "furious"],
    },
}
QUESTIONS = spec.parse(DOC, limits=spec.DEFAULT_LIMITS).questions


def content(**overrides):
    reply = {
        "q1": {"probability_true": 0.7},
        "q2": {
            "choice": "billing",
            "probabilities": {"billing": 0.8, "tech": 0.15, "other": 0.05},
            "confidence": 0.75,
        },
        "q3": {"probabilities": {"0": 0.1, "1": 0.6, "2": 0.3}, "confidence": 0.6},
    }
    reply.update(overrides)
    return reply


def completion(body=None, **extra):
    text = body if isinstance(body, str) else json.dumps(content() if body is None else body)
    return {
        "id": "chatcmpl-1",
        "model": "some-chat-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 40},
        **extra,
    }


@pytest.fixture
def chat(settings):
    p = Provider(default=completion())
    settings.LLM_API_KEY = KEY
    settings.LLM_BASE_URL = f"{p.url}/v1"
    settings.LLM_MODEL = "some-chat-model"
    settings.DECISIONS_TIMEOUT_SECONDS = TIMEOUT
    yield p
    p.stop()


def ask(document=None, state=STATE, backend="llm", **kw):
    kw.setdefault("user", roles.OPERATOR)
    return services.decision_ask(backend=backend, document=document or DOC, state=state, **kw)


# --- the request -------------------------------------------------------------------------------


def test_the_request_is_a_chat_completion_with_a_json_schema_and_no_question_ids(chat):
    outcome = ask()
    assert outcome.status == 200, outcome.to_json()
    sent = chat.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "some-chat-model"
    schema = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and schema["strict"] is True
    assert schema["schema"]["required"] == ["q1", "q2", "q3"]
    desk = schema["schema"]["properties"]["q2"]["properties"]
    assert desk["choice"]["enum"] == ["billing", "tech", "other"]
    assert desk["probabilities"]["required"] == ["billing", "tech", "other"]
    levels = schema["schema"]["properties"]["q3"]["properties"]["probabilities"]
    assert levels["required"] == ["0", "1", "2"]
    user = json.loads(body["messages"][-1]["content"])
    assert user == {
        "state": STATE,
        "questions": {"q1": DOC["zq_urgent_id"], "q2": DOC["zq_desk_id"], "q3": DOC["zq_anger_id"]},
    }
    # ids are addressing, never content (seed 001): not one byte of them goes out
    assert b"zq_" not in sent["raw"]
    # the recording keeps the exact bytes, without the key
    record = Decision.objects.get()
    assert record.request_text.encode() == sent["raw"] and KEY not in record.request_text


def test_two_sets_differing_only_in_ids_send_the_same_bytes(chat):
    ask()
    renamed = {f"other_{k}": v for k, v in DOC.items()}
    ask(document=renamed)
    assert chat.requests[0]["raw"] == chat.requests[1]["raw"]


# --- the reply -----------------------------------------------------------------------------------


def test_the_reply_is_shaped_like_a_native_answer_and_marked_uncalibrated(chat):
    outcome = ask()
    out = outcome.to_json()
    assert out["calibrated"] is False and out["backend"] == "llm"
    assert list(out["answers"]) == list(DOC)
    assert out["answers"]["zq_urgent_id"] == {"type": "noul", "noul": 0.7}
    desk = out["answers"]["zq_desk_id"]
    assert desk["choice"] == "billing" and desk["confidence"] == 0.75
    assert desk["probabilities"] == {"billing": 0.8, "tech": 0.15, "other": 0.05}
    anger = out["answers"]["zq_anger_id"]
    assert anger["score"] == 1.2  # 0·0.1 + 1·0.6 + 2·0.3
    assert anger["legend"] == {"0": "calm", "1": "annoyed", "2": "furious"}
    assert out["usage"] == {"input_tokens": 321, "output_tokens": 40}
    assert out["model"] == "some-chat-model"
    assert out["request_id"] == "chatcmpl-1"
    record = Decision.objects.get()
    assert record.calibrated is False and record.status == 200
    assert DecisionAnswer.objects.filter(decision=record).count() == 3


def test_a_native_wire_stays_calibrated(settings):
    p = Provider(default=standin.respond({"state": STATE, "questions": DOC})[1])
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = KEY, p.url
    try:
        outcome = ask(backend="typesafe")
    finally:
        p.stop()
    assert outcome.to_json()["calibrated"] is True
    assert Decision.objects.get().calibrated is True


def test_a_native_provider_that_says_calibrated_false_is_believed(settings):
    reply = standin.respond({"state": STATE, "questions": DOC})[1]
    p = Provider(default={**reply, "calibrated": False})
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = KEY, p.url
    try:
        outcome = ask(backend="typesafe")
    finally:
        p.stop()
    assert outcome.status == 200 and outcome.to_json()["calibrated"] is False
    assert Decision.objects.get().calibrated is False


def test_the_replay_of_the_llm_wire_is_uncalibrated_too(chat):
    ask()
    replay = ask(backend="recorded:llm", model="some-chat-model")
    assert replay.status == 200 and replay.to_json()["calibrated"] is False
    assert replay.checked.answers["zq_desk_id"]["choice"] == "billing"
    assert backends.calibrated("recorded:llm") is False
    assert backends.calibrated("llm") is False and backends.calibrated("typesafe") is True


def test_stated_probabilities_are_kept_and_a_bad_sum_is_a_flag_not_a_refusal(chat):
    off = {"billing": 0.7, "tech": 0.5, "other": 0.2}  # sums to 1.4
    chat.reply(
        200, completion(content(q2={"choice": "billing", "probabilities": off, "confidence": 0.9}))
    )
    outcome = ask()
    assert outcome.status == 200
    desk = outcome.checked.answers["zq_desk_id"]
    assert desk["probabilities"] == off
    assert [f["code"] for f in desk["flags"]] == ["sum"]


def test_a_reported_cost_wins_and_an_unknown_price_leaves_the_cost_unknown(chat, settings):
    assert ask().checked.cost is None
    chat.reply(200, completion(usage={"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.003}))
    assert ask().checked.cost == 0.003
    settings.LLM_PRICE_PER_MILLION_INPUT_TOKENS = 1.0
    assert ask().checked.cost == pytest.approx(321 / 1_000_000)


# --- replies that break the schema, and malformed bodies -----------------------------------------


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (
            content(
                q2={
                    "choice": "sales",
                    "probabilities": {"billing": 0.8, "tech": 0.1, "other": 0.1},
                    "confidence": 0.5,
                }
            ),
            "zq_desk_id` chose `sales`",
        ),
        (content(q1={"probability_true": 1.4}), "noul is 1.4"),
        (content(q1={"probability_true": "high"}), "noul must be a number"),
        (content(q3={"probabilities": {"0": 0.5, "1": 0.5}, "confidence": 0.5}), "lack level `2`"),
        (
            content(
                q2={"choice": "billing", "probabilities": {"billing": 1, "tech": 0, "other": 0}}
            ),
            "lacks confidence",
        ),
        (content(q1={"probability_true": 0.2, "why": "because"}), "adds why"),
        ({k: v for k, v in content().items() if k != "q3"}, "`zq_anger_id` has no answer"),
        (content(q4={"probability_true": 0.1}), "questions never asked: q4"),
        ([1, 2], "not an object"),
    ],
)
def test_a_reply_that_breaks_the_schema_is_a_502_naming_the_question(chat, reply, words):
    chat.reply(200, completion(reply))
    outcome = ask()
    assert outcome.status == 502
    assert words in outcome.error.detail, outcome.error.detail
    assert Decision.objects.get().status == 502


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<html>gateway</html>", "not JSON"),
        ({"id": "x", "choices": []}, "has no choices"),
        ({"choices": [{"message": {"role": "assistant", "content": None}}]}, "no text content"),
        ({"choices": [{"message": {"content": None, "refusal": "I cannot help"}}]}, "refused"),
        (completion("here you go: {"), "reply is not JSON"),
        (
            {"choices": [{"message": {"content": '{"q1"'}, "finish_reason": "length"}]},
            "cut off",
        ),
        ({"error": {"message": "upstream failed"}}, "200 with an error"),
    ],
)
def test_a_malformed_body_is_a_502(chat, body, words):
    chat.reply(200, body)
    outcome = ask()
    assert outcome.status == 502 and words in outcome.error.detail, outcome.error.detail


# --- the error table -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "mapped", "shows_words"),
    [
        (400, 422, True),
        (422, 422, True),
        (429, 429, True),
        (401, 502, False),
        (403, 502, False),
        (402, 502, False),
        (500, 502, False),
        (503, 502, False),
        (504, 504, False),
        (418, 502, False),
    ],
)
def test_provider_statuses_map_through_the_same_table(chat, caplog, status, mapped, shows_words):
    words = f"model said no to {KEY}"
    chat.reply(status, {"error": {"message": words, "code": status}}, headers={"Retry-After": "3"})
    with caplog.at_level(logging.INFO, logger="questions"):
        outcome = ask()
    assert outcome.status == mapped
    assert outcome.error.provider_status_code == status
    shown = json.dumps(outcome.to_json())
    assert ("model said no" in shown) is shows_words
    if status == 429:
        assert outcome.error.retry_after == 3
    record = Decision.objects.get()
    for text in (shown, caplog.text, record.response_text, record.detail, record.provider_detail):
        assert KEY not in text


def test_a_provider_that_echoes_the_key_in_a_good_reply_loses_it(chat):
    chat.reply(200, completion(model=f"chat-{KEY}", id=f"req-{KEY}", note=KEY))
    outcome = ask()
    assert outcome.status == 200
    assert KEY not in json.dumps(outcome.to_json())
    assert KEY not in Decision.objects.get().response_text


def test_no_answer_in_time_is_a_504(chat, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 0.5
    chat.reply(200, completion(), delay=1.5)
    outcome = ask()
    assert outcome.status == 504 and "0.5 seconds" in outcome.error.detail


def test_an_unreachable_endpoint_is_a_502(settings):
    settings.LLM_API_KEY, settings.LLM_BASE_URL = KEY, "http://127.0.0.1:9/v1"
    outcome = ask()
    assert outcome.status == 502 and "could not be reached" in outcome.error.detail


def test_without_a_key_nothing_is_sent_and_the_503_names_the_variable(settings):
    settings.LLM_API_KEY = ""
    outcome = ask()
    assert outcome.status == 503 and "LLM_API_KEY" in outcome.error.detail
    assert not Decision.objects.exists()


# --- the stand-in answers this wire too ----------------------------------------------------------


@pytest.fixture
def stand_in(settings):
    with stand_in_serving(settings) as server:
        yield server


def test_the_stand_in_answers_the_llm_wire_deterministically_and_apart_from_jev(stand_in):
    first, second = ask(), ask()
    assert first.status == 200, first.to_json()
    assert first.checked.answers == second.checked.answers
    assert first.checked.model == standin.CHAT_MODEL and first.calibrated is False
    native = standin.respond({"state": STATE, "questions": DOC})[1]["answers"]
    assert (
        first.checked.answers["zq_desk_id"]["probabilities"]
        != native["zq_desk_id"]["probabilities"]
    )


def test_the_stand_in_refuses_a_chat_request_it_cannot_read():
    assert standin.respond_chat({"messages": []})[0] == 400
    bad = llm.request_body(QUESTIONS, 1, "m")
    bad["messages"][-1]["content"] = json.dumps(
        {"state": 1, "questions": {"q1": {"type": "choice", "criteria": {"a": 1}}}}
    )
    status, body = standin.respond_chat(bad)
    assert status == 400 and "q1" in body["error"]["message"]


def test_cli_ask_through_llm_prints_calibrated_false(stand_in, tmp_path):
    (tmp_path / "q.json").write_text(json.dumps(DOC))
    (tmp_path / "s.json").write_text(json.dumps(STATE))
    code, out, err = run_cli(
        "ask",
        "--file",
        str(tmp_path / "q.json"),
        "--state-file",
        str(tmp_path / "s.json"),
        "--backend",
        "llm",
    )
    assert code == 0, err
    printed = json.loads(out)
    assert printed["calibrated"] is False and printed["backend"] == "llm"


# --- the pure functions --------------------------------------------------------------------------


def test_the_request_and_the_reply_are_pure_functions_of_the_ask():
    body = llm.request_body(QUESTIONS, STATE, "m")
    assert body == llm.request_body(QUESTIONS, STATE, "m")
    assert llm.read_request(body) == (
        STATE,
        {"q1": DOC["zq_urgent_id"], "q2": DOC["zq_desk_id"], "q3": DOC["zq_anger_id"]},
    )
    native = llm.native_reply(QUESTIONS, completion())
    assert native["calibrated"] is False and set(native["answers"]) == set(DOC)


def test_a_score_whose_levels_do_not_sum_to_one_is_weighed_by_its_mean_level():
    reply = completion(
        content(q3={"probabilities": {"0": 0.0, "1": 0.5, "2": 1.0}, "confidence": 1})
    )
    assert llm.native_reply(QUESTIONS, reply)["answers"]["zq_anger_id"]["score"] == 1.67


# --- calibrated: false wherever the decisions are shown ------------------------------------------


@pytest.mark.django_db(transaction=True)  # a batch run's workers use their own connections
def test_the_preview_run_page_comparison_exports_and_cli_batch_say_calibrated_false(stand_in):
    from django.test import Client
    from django.urls import reverse

    from questions.selectors import comparison, comparison_formats
    from tests import factories

    writer = factories.author("writer")
    qs = factories.question_set("s", owner=writer, doc=DOC)
    version = factories.draft(qs)
    services.sample_state_create(question_set=qs, name="t", state=STATE, author=writer)
    client = Client()
    client.force_login(writer)
    page = client.post(
        reverse("version-preview", args=["s", version.number]),
        {"preview_backend": "llm", "preview_state_json": json.dumps(STATE)},
    ).content.decode()
    assert "calibrated: false" in page
    assert "These answers come from a chat model (<code>llm</code>)" in page
    code, out, err = run_cli("batch", "--set", "s", "--version", "1", "--backend", "llm", "--json")
    assert code == 0, err
    assert json.loads(out)["calibrated"] is False
    code, out, _ = run_cli("batch", "--set", "s", "--version", "1", "--backend", "llm")
    assert "(calibrated: false)" in out
    run = qs.batch_runs.order_by("pk").first()
    assert "calibrated: false" in client.get(reverse("run-detail", args=[run.pk])).content.decode()
    selection = comparison.Selection(columns=[f"run:{run.pk}", "v1:recorded"])
    columns, rows = comparison.build(qs, selection, writer)
    exported = json.loads(comparison_formats.as_json(columns, rows, selection))
    assert [c["calibrated"] for c in exported["columns"]] == [False, True]
    assert "calibrated: false" in exported["columns"][0]["label"]
    assert f"run:{run.pk} answer (calibrated: false)" in comparison_formats.as_csv(columns, rows)
    assert "v1:recorded answer," in comparison_formats.as_csv(columns, rows)
    services.version_submit(version=version, author=writer)
    review = client.get(reverse("version-review", args=["s", version.number])).content.decode()
    assert "calibrated: false" in review  # the evidence's run went through llm
