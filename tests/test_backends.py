"""Each backend against a real HTTP server on loopback: success, every row of the error
mapping, timeouts, refused connections, malformed bodies and bad answers — and the key and the
state never leaking into an error, a log line, a record or an output."""

from __future__ import annotations

import base64
import json
import logging
import socket
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from questions import roles, services
from questions.engine.backends.redaction import _secret_pattern, scrub
from questions.models import Decision, DecisionAnswer
from tests import factories
from tests.providers import KEY, Provider
from tests.strategies import json_values, question_maps

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parent / "examples"
STATE = "Help! My payouts have been failing for 3 days."
DOCUMENT = json.loads((EXAMPLES / "typesafe-request.json").read_text())["questions"]
GOOD = {
    "model": "jev-1.13.0",
    "answers": {
        "is_urgent": {"type": "noul", "noul": 0.95},
        "department": {
            "type": "choice",
            "choice": "billing",
            "probabilities": {"billing": 0.88, "technical": 0.12, "sales": 0.0},
            "confidence": 0.81,
        },
        "frustration": {
            "type": "score",
            "score": 1.05,
            "legend": {"0": "Calm", "1": "Frustrated", "2": "Very angry"},
            "probabilities": {"0": 0.0, "1": 0.95, "2": 0.05},
            "confidence": 0.92,
        },
    },
    "usage": {"input_tokens": 918, "output_tokens": 0},
}
PATHS = {"typesafe": "/v1/systemone", "runtime": "/api/decisions", "openrouter": "/alpha/decisions"}


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(default=GOOD), every_wire=True)


def ask(backend="typesafe", document=None, state=STATE, **kw):
    kw.setdefault("user", roles.OPERATOR)
    return services.decision_ask(backend=backend, document=document or DOCUMENT, state=state, **kw)


def assert_no_leak(caplog, *outputs):
    """Neither the key nor the state in any log line, record or output."""
    texts = [caplog.text, *(json.dumps(o) for o in outputs)]
    for d in Decision.objects.all():
        texts.extend(
            [d.detail, d.provider_detail, d.response_text, d.request_text, json.dumps(d.usage)]
        )
    for text in texts:
        assert KEY not in text
    for text in [caplog.text, *(json.dumps(o) for o in outputs)]:
        assert STATE not in text


# --- success -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["typesafe", "runtime", "openrouter"])
def test_success_is_checked_recorded_and_keyed(provider, backend, caplog):
    caplog.set_level(logging.DEBUG)
    reply = dict(GOOD)
    if backend == "runtime":
        reply["timing"] = {"total_ms": 356, "provider_ms": 349}
    if backend == "openrouter":
        reply |= {
            "id": "gen-42",
            "provider": "TypeSafe",
            "usage": {"input_tokens": 918, "cost": 0.5},
        }
    provider.reply(200, reply, {"x-typesafe-request-id": "req-1"})
    outcome = ask(backend)
    assert outcome.status == 200, outcome.error
    assert outcome.checked.answers["department"]["nearUniform"] is False
    sent = provider.requests[0]
    assert sent["path"] == PATHS[backend]
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    expected_body = {"state": STATE, "questions": DOCUMENT}
    if backend != "runtime":
        expected_body["model"] = "~typesafe/jev-latest" if backend == "openrouter" else "jev-latest"
    assert sent["body"] == expected_body
    decision = Decision.objects.get()
    assert (decision.backend, decision.status, decision.model_answered) == (
        backend,
        200,
        "jev-1.13.0",
    )
    assert json.loads(decision.request_text) == expected_body  # the body sent, no key
    assert decision.provider_ms is not None and decision.total_ms >= decision.provider_ms
    if backend == "typesafe":
        assert decision.request_id == "req-1"
        assert decision.cost == pytest.approx(918 * 0.042 / 1e6)
    if backend == "openrouter":
        assert (decision.request_id, decision.cost) == ("gen-42", 0.5)
        assert outcome.checked.extra["provider"] == "TypeSafe"
    assert DecisionAnswer.objects.filter(decision=decision).count() == 3
    assert_no_leak(caplog, outcome.to_json())


def test_unasked_answers_are_dropped_and_added_fields_kept(provider):
    reply = json.loads(json.dumps(GOOD))
    reply["answers"]["extra_id"] = {"type": "noul", "noul": 0.5}
    reply["answers"]["is_urgent"]["calibrated"] = True
    reply["trace"] = "t-1"
    provider.reply(200, reply)
    outcome = ask()
    assert set(outcome.checked.answers) == set(DOCUMENT)
    assert outcome.checked.answers["is_urgent"]["calibrated"] is True
    assert outcome.to_json()["trace"] == "t-1"
    assert not DecisionAnswer.objects.filter(question_id="extra_id").exists()


# --- every row of the mapping ---------------------------------------------------------------------


FASTAPI_422 = {
    "detail": [
        {
            "loc": ["body", "questions", "department", "choice", "criteria"],
            "msg": "Too many choices",
            "type": "value_error",
            "input": STATE,
        }
    ]
}


@pytest.mark.parametrize(
    ("status", "body", "headers", "mapped", "provider_detail"),
    [
        (400, {"detail": {"error_type": "max_tokens_exceeded"}}, {}, 422, "max_tokens_exceeded"),
        (
            400,
            {"detail": {"message": "Unknown model: jev-nope", "error_type": "unknown"}},
            {},
            422,
            "Unknown model: jev-nope",
        ),
        (422, FASTAPI_422, {}, 422, "questions.department.choice.criteria: Too many choices"),
        (429, {"detail": "Slow down"}, {"Retry-After": "7"}, 429, "Slow down"),
        (401, {"detail": f"Invalid key {KEY}"}, {}, 502, None),
        (403, {"detail": "Key lacks access"}, {}, 502, None),
        (500, {"detail": "boom"}, {}, 502, None),
        (529, {"detail": "overloaded"}, {}, 502, None),
        (404, {"detail": "Not Found"}, {}, 502, None),
    ],
)
def test_provider_errors_map_to_the_table(
    provider, caplog, status, body, headers, mapped, provider_detail
):
    caplog.set_level(logging.INFO)
    provider.reply(status, body, headers)
    outcome = ask()
    error = outcome.error
    assert (error.status, error.provider_status_code) == (mapped, status)
    assert error.provider_detail == provider_detail
    if status == 429:
        assert error.retry_after == 7
    decision = Decision.objects.get()
    assert decision.status == mapped and decision.provider_status_code == status
    assert not DecisionAnswer.objects.exists()
    if status in (401, 403):
        assert decision.response_text == ""  # what it says about the key: server log only
        assert "refused the key" in caplog.text
    assert_no_leak(caplog, outcome.to_json())


def test_openrouter_error_shape_and_in_band_errors(provider):
    provider.reply(400, {"error": {"code": 400, "message": "Bad criteria", "metadata": {}}})
    assert ask("openrouter").error.provider_detail == "Bad criteria"
    provider.reply(200, {"error": {"code": 502, "message": "upstream"}})
    error = ask("openrouter").error
    assert (error.status, error.provider_status_code) == (502, 200)
    provider.reply(524, {"error": {"code": 524, "message": "timeout"}})
    assert ask("openrouter").error.status == 504


def test_the_runtimes_own_errors_pass_their_provider_detail_on(provider):
    provider.reply(
        422,
        {
            "detail": "The provider rejected the questions",
            "provider_status_code": 422,
            "provider_detail": "Too many choices",
        },
    )
    error = ask("runtime").error
    assert (error.status, error.provider_detail) == (422, "Too many choices")
    provider.reply(503, {"detail": "Decisions need TYPESAFE_API_KEY on the runtime"})
    error = ask("runtime").error
    assert error.status == 503 and "TYPESAFE_API_KEY on the runtime" in error.detail


def test_a_provider_echoing_the_key_or_the_state_is_scrubbed(provider, caplog):
    provider.reply(422, {"detail": f"bad request from {KEY} about {STATE}"})
    outcome = ask()
    assert KEY not in outcome.error.provider_detail
    assert STATE not in outcome.error.provider_detail
    assert_no_leak(caplog, outcome.to_json())


#: a mixed-case key that URL-encoding and both base64 alphabets change, with a padded base64
ODD_KEY = "sk-Test/4f9c+2a7E=1b ~x?9"
KEY_FORMS = {
    "as written": ODD_KEY,
    "upper-cased": ODD_KEY.upper(),
    "lower-cased": ODD_KEY.lower(),
    "quote": quote(ODD_KEY),
    "quote, nothing safe": quote(ODD_KEY, safe=""),
    "quote_plus": quote_plus(ODD_KEY),
    "every character as %XX": "".join(f"%{byte:02X}" for byte in ODD_KEY.encode()),
    "base64": base64.b64encode(ODD_KEY.encode()).decode(),
    "base64 unpadded": base64.b64encode(ODD_KEY.encode()).decode().rstrip("="),
    "urlsafe base64": base64.urlsafe_b64encode(ODD_KEY.encode()).decode(),
    "urlsafe base64 unpadded": base64.urlsafe_b64encode(ODD_KEY.encode()).decode().rstrip("="),
}


@pytest.fixture
def odd_key(provider, settings):
    settings.TYPESAFE_API_KEY = ODD_KEY
    return provider


def preview_page(client) -> str:
    """The preview panel's answer to the typesafe backend, asked by an author."""
    owner = factories.author()
    qs = factories.question_set(owner=owner, doc=DOCUMENT)
    client.force_login(owner)
    response = client.post(
        reverse("version-preview", args=[qs.slug, 1]),
        {
            "preview_state": "",
            "preview_state_json": json.dumps(STATE),
            "preview_backend": "typesafe",
        },
    )
    assert response.status_code == 200
    return response.content.decode()


def recorded_texts() -> list[str]:
    texts = []
    for d in Decision.objects.all():
        texts.extend([d.detail, d.provider_detail, d.response_text, d.model_answered, d.request_id])
    return texts


def key_forms_in(*texts: str) -> list[str]:
    return [name for name, form in KEY_FORMS.items() for text in texts if form in text]


@pytest.mark.parametrize("form", KEY_FORMS.values(), ids=KEY_FORMS.keys())
def test_a_key_echoed_in_an_error_in_any_form_is_scrubbed(odd_key, client, caplog, form):
    caplog.set_level(logging.DEBUG)
    odd_key.reply(400, {"detail": f"bad request with key {form}"})
    odd_key.reply(400, {"detail": f"bad request with key {form}"})
    outcome = ask()
    page = preview_page(client)
    error = outcome.error
    assert (error.status, error.provider_detail) == (422, "bad request with key [redacted]")
    assert "bad request with key [redacted]" in page
    assert Decision.objects.count() == 2
    shown = [str(error), error.provider_detail, json.dumps(outcome.to_json()), caplog.text, page]
    assert key_forms_in(*shown, *recorded_texts()) == []


@pytest.mark.parametrize("form", KEY_FORMS.values(), ids=KEY_FORMS.keys())
def test_a_key_echoed_as_the_model_in_any_form_is_scrubbed(odd_key, client, caplog, form):
    caplog.set_level(logging.DEBUG)
    odd_key.reply(200, {**GOOD, "model": f"jev-1.13.0 {form}"})
    odd_key.reply(200, {**GOOD, "model": f"jev-1.13.0 {form}"})
    outcome = ask()
    page = preview_page(client)
    assert (outcome.status, outcome.checked.model) == (200, "jev-1.13.0 [redacted]")
    assert "jev-1.13.0 [redacted]" in page
    models = Decision.objects.values_list("model_answered", flat=True)
    assert list(models) == ["jev-1.13.0 [redacted]"] * 2
    shown = [json.dumps(outcome.to_json()), caplog.text, page]
    assert key_forms_in(*shown, *recorded_texts()) == []


def test_a_key_echoed_in_the_request_id_or_an_added_field_is_scrubbed(provider):
    provider.reply(
        200, {**GOOD, "id": f"gen-{KEY}", "trace": {"echo": [f"key {KEY.upper()}"], KEY: 1}}
    )
    outcome = ask("openrouter")
    assert outcome.request_id == "gen-[redacted]"
    assert outcome.to_json()["trace"] == {"echo": ["key [redacted]"], "[redacted]": 1}
    assert Decision.objects.get().request_id == "gen-[redacted]"


@pytest.mark.parametrize("around", [("Bearer ", ""), ("u:", " trailing"), ("", "x")])
def test_the_key_base64_encoded_inside_a_longer_text_is_scrubbed_but_for_its_edges(around):
    before, after = around
    encoded = base64.b64encode(f"{before}{ODD_KEY}{after}".encode()).decode()
    scrubbed = scrub(f"header {encoded}", ODD_KEY)
    left, right = scrubbed.removeprefix("header ").split("[redacted]")
    # what is left holds the surrounding text and at most two bytes of the key at either end
    assert len(base64.b64decode(left + "=" * (-len(left) % 4))) <= len(before.encode()) + 2
    assert len(right) <= 4 * ((len(after.encode()) + 2) // 3 + 1)


#: keys of every kind `scrub`'s quick look must not misjudge: with spaces (a `+` each), with
#: characters a URL escapes, non-ASCII (the long s is an `s` letter case aside), plain
SCRUBBED_KEYS = [ODD_KEY, "sk-Te/st+4f=9c", "key one 42", "key-\u017f-42x", "sk-0123456789abcdef"]


def escaped(key: str, every: int) -> str:
    """The key with every `every`-th character URL-encoded (`%XX`)."""
    return "".join(
        "".join(f"%{byte:02X}" for byte in char.encode()) if i % every == 0 else char
        for i, char in enumerate(key)
    )


def key_pieces(key: str) -> list[str]:
    """Every form of a key, its halves, and what sits near one (the long s, a Kelvin sign)."""
    forms = [
        key, key.upper(), key.lower(), quote(key, safe=""), quote_plus(key),
        base64.b64encode(key.encode()).decode(), base64.urlsafe_b64encode(key.encode()).decode(),
        base64.b64encode(f"Bearer {key}".encode()).decode(), escaped(key, 1), escaped(key, 3),
    ]  # fmt: skip
    halves = [form[: len(form) // 2] for form in forms] + [form[len(form) // 2 :] for form in forms]
    return forms + halves + ["%", "+", " ", "\u017f", "\u212a", "S", "k", '{"model": "jev"}']


def whole_pattern(text: str, key: str) -> str:
    return _secret_pattern(key).sub("[redacted]", text.replace(key, "[redacted]"))


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("key one 42", '{"echo": "key+one+42"}'),  # ASCII, no %: found by its + only
        ("key-\u017f-42x", '{"echo": "KEY-S-42X"}'),  # ASCII text, the key's long s an S
        ("sk-Te/st+4f=9c", '{"echo": "sk-Te%2Fst%2B4f%3D9c"}'),  # found by its escapes only
        ("sk-0123456789abcdef", '{"echo": "SK-0123456789ABCDEF"}'),
    ],
)
def test_scrub_finds_a_key_its_quick_look_could_miss(key, text):
    assert scrub(text, key) == whole_pattern(text, key) == '{"echo": "[redacted]"}'


@settings(max_examples=400)
@given(st.data())
def test_scrub_removes_what_the_whole_pattern_removes(data):
    # the quick look that spares most text the pattern never changes what is removed
    key = data.draw(st.sampled_from(SCRUBBED_KEYS))
    pieces = st.sampled_from(key_pieces(key)) | st.text(max_size=8)
    text = "".join(data.draw(st.lists(pieces, max_size=8)))
    assert scrub(text, key) == whole_pattern(text, key)


def test_provider_detail_is_at_most_500_characters(provider):
    provider.reply(400, {"detail": "x" * 2000})
    assert len(ask().error.provider_detail) == 500


# --- the wire failing ----------------------------------------------------------------------------


def test_a_hang_past_the_timeout_is_a_504(provider, caplog, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 0.5
    provider.reply(200, GOOD, delay=1.5)
    started = time.perf_counter()
    outcome = ask()
    assert outcome.error.status == 504  # the answer, 1.5 s away, was not waited for
    assert time.perf_counter() - started >= 0.5
    assert "DECISIONS__TIMEOUT_SECONDS" in outcome.error.detail
    assert Decision.objects.get().status == 504
    assert_no_leak(caplog, outcome.to_json())


def test_connection_refused_is_a_502(provider, settings, caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{closed}"
    outcome = ask()
    assert (outcome.error.status, outcome.error.provider_status_code) == (502, None)
    assert "could not be reached" in outcome.error.detail
    assert_no_leak(caplog, outcome.to_json())


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        (b"<html>gateway</html>", "not JSON"),
        (
            {
                "model": "m",
                "answers": {k: v for k, v in GOOD["answers"].items() if k != "department"},
            },
            "has no answer",
        ),
        (
            {**GOOD, "answers": {**GOOD["answers"], "is_urgent": {"type": "noul", "noul": "high"}}},
            "must be a number",
        ),
        (
            {**GOOD, "answers": {**GOOD["answers"], "is_urgent": {"type": "noul", "noul": 1.2}}},
            "must lie in 0..1",
        ),
        (
            {
                **GOOD,
                "answers": {
                    **GOOD["answers"],
                    "department": {**GOOD["answers"]["department"], "choice": "legal"},
                },
            },
            "not a declared option",
        ),
        (
            {
                **GOOD,
                "answers": {
                    **GOOD["answers"],
                    "frustration": {**GOOD["answers"]["frustration"], "score": 1.9},
                },
            },
            "two-decimal rounding",
        ),
    ],
)
def test_a_200_with_a_bad_body_is_a_502_naming_the_rule(provider, caplog, body, rule):
    provider.reply(200, body)
    outcome = ask()
    assert (outcome.error.status, outcome.error.provider_status_code) == (502, 200)
    assert rule in outcome.error.detail
    assert not DecisionAnswer.objects.exists()
    assert Decision.objects.get().status == 502
    assert_no_leak(caplog, outcome.to_json())


# --- nothing sent --------------------------------------------------------------------------------


def test_nothing_is_sent_for_an_invalid_document_or_state(provider):
    outcome = ask(document={"q": {"type": "choice", "criteria": {"only": "one"}}})
    assert outcome.error.status == 422 and "Nothing was sent" in outcome.error.detail
    outcome = ask(state="x" * 300_000)
    assert outcome.error.status == 422 and "state" in outcome.error.detail
    assert STATE not in outcome.error.detail
    assert provider.requests == [] and not Decision.objects.exists()


@pytest.mark.parametrize("backend", ["typesafe", "openrouter"])
@pytest.mark.parametrize("state", [None, True, 42])
def test_a_state_the_providers_schema_refuses_is_a_422_on_its_wires_before_any_call(
    provider, backend, state
):
    outcome = ask(backend, state=state)
    assert outcome.error.status == 422
    assert "Nothing was sent" in outcome.error.detail
    assert "state_refused_by_provider" not in outcome.error.detail  # words, not codes
    assert "a string, an object or an array" in outcome.error.provider_detail
    assert provider.requests == [] and not Decision.objects.exists()


def test_a_null_score_level_is_a_422_on_the_providers_wires_and_goes_out_through_the_runtime(
    provider,
):
    document = {"rate": {"type": "score", "instructions": "Rate it.", "criteria": ["low", None]}}
    refused = ask("typesafe", document=document)
    assert refused.error.status == 422
    assert "questions.rate.criteria.1" in refused.error.provider_detail
    assert provider.requests == []
    provider.default = {
        "model": "jev-1.13.0",
        "answers": {
            "rate": {
                "type": "score",
                "score": 0.5,
                "legend": {"0": "low", "1": None},
                "probabilities": {"0": 0.5, "1": 0.5},
                "confidence": 0.0,
            }
        },
        "usage": {"input_tokens": 10, "output_tokens": 0},
    }
    # the runtime takes any JSON (seed 000): what its provider makes of it is its answer
    sent = ask("runtime", document=document, state=None)
    assert [r["path"] for r in provider.requests] == ["/api/decisions"]
    assert provider.requests[0]["body"]["state"] is None
    assert sent.error is None


@pytest.mark.parametrize(
    ("backend", "variable"),
    [
        ("typesafe", "TYPESAFE_API_KEY"),
        ("runtime", "RUNTIME_URL and RUNTIME_TOKEN"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
def test_a_missing_key_is_a_503_naming_the_variable_and_sends_nothing(
    provider, settings, backend, variable
):
    settings.TYPESAFE_API_KEY = settings.RUNTIME_TOKEN = settings.OPENROUTER_API_KEY = ""
    outcome = ask(backend)
    assert outcome.error.status == 503
    assert variable in outcome.error.detail
    assert provider.requests == [] and not Decision.objects.exists()


def test_the_key_variable_can_be_renamed(provider, settings):
    settings.TYPESAFE_API_KEY = ""
    settings.DECISIONS_API_KEY_ENV = "JEV_KEY"
    assert "JEV_KEY" in ask().error.detail


# --- recorded ------------------------------------------------------------------------------------


def test_recorded_replays_what_was_asked_without_the_network(provider, settings):
    provider.reply(200, GOOD)
    live = ask()
    settings.TYPESAFE_BASE_URL = "http://127.0.0.1:9"  # nothing is there; nothing is called
    before = len(provider.requests)
    replay = ask("recorded")
    assert len(provider.requests) == before
    assert replay.status == 200 and replay.missing == []
    assert replay.checked.answers == live.checked.answers
    assert Decision.objects.count() == 1  # a replay is not a call


def test_recorded_matches_by_words_not_by_id_or_version_and_reports_the_rest(provider):
    provider.reply(200, GOOD)
    ask()
    renamed = {
        "urgent_renamed": DOCUMENT["is_urgent"],
        "department": {**DOCUMENT["department"], "instructions": "Changed words?"},
    }
    replay = ask("recorded", document=renamed)
    assert replay.status == 200
    assert list(replay.checked.answers) == ["urgent_renamed"]
    assert replay.missing == ["department"]
    other_state = ask("recorded", state="Another state")
    assert other_state.error.status == 404
    other_model = ask("recorded", model="jev-nope")
    assert other_model.error.status == 404
    assert ask("recorded", model="jev-1.13.0").status == 200  # the model that answered


def test_the_preview_never_retries(provider):
    provider.reply(529, {"detail": "overloaded"})
    provider.reply(200, GOOD)
    assert ask().error.status == 502
    assert len(provider.requests) == 1


# --- the request's bytes and hash, the questions encoded once ----------------------------


@settings(max_examples=150, deadline=None)
@given(
    questions=question_maps, state=json_values, model=st.text(max_size=12), wire=st.sampled_from(
        ["typesafe", "runtime", "openrouter", "llm"]
    )
)  # fmt: skip
def test_a_request_is_the_bytes_and_hash_of_its_body_however_it_was_encoded(
    questions, state, model, wire
):
    """`prepare` encodes the questions once per map and the state once per ask
    (`encoded_body`): what goes out is still `wire_json` of the body, and the recorded hash
    `sha256_of` it, for any questions, any JSON state and every wire."""
    from questions.core import check, spec
    from questions.engine import backends

    validation = check.validate(questions, limits=spec.DEFAULT_LIMITS)
    if not validation.valid:
        return
    parsed = validation.document.questions
    chosen = backends.get(wire).wire()
    for _ in range(2):  # the second ask of the same map takes its encodings as kept
        ask = backends.Ask(questions=parsed, state=state, model=model)
        try:
            outcome, payload, _headers = chosen.prepare(ask)
        except (ValueError, UnicodeEncodeError) as exc:  # what JSON text cannot hold
            with pytest.raises(type(exc)):
                spec.canonical_json(chosen.body(ask))
            return
        assert payload == spec.wire_json(outcome.request_body)
        assert outcome.request_sha256 == spec.sha256_of(outcome.request_body)
        assert ask.state_sha256 == spec.state_sha256(state)
