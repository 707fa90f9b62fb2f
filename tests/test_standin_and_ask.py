"""The stand-in provider, `questions ask`, the preview partial and its charts."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from questions import services
from questions.core import answers, charts, spec
from questions.dev import standin
from questions.models import Decision
from tests import factories
from tests.helpers import TYPESAFE_DOCUMENT as DOCUMENT
from tests.helpers import write
from tests.providers import run_cli as run
from tests.providers import stand_in_serving
from tests.strategies import json_values, question_maps

EXAMPLES = Path(__file__).resolve().parent / "examples"


@pytest.fixture
def stand_in(settings):
    with stand_in_serving(settings) as server:
        yield server


# --- the stand-in ---------------------------------------------------------------------------------


def test_the_stand_in_queues_a_burst_of_connections_a_run_at_concurrency_64_opens():
    """Nothing accepts while the burst arrives: every connection must wait in the listen queue
    (socketserver's default of 5 let the kernel drop the rest)."""
    server = standin.make_server()
    sockets = []
    try:
        for _ in range(100):
            sock = socket.create_connection(server.server_address, timeout=2)
            sockets.append(sock)
        assert len(sockets) == 100
    finally:
        for sock in sockets:
            sock.close()
        server.server_close()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(question_maps, json_values)
def test_the_stand_ins_answers_are_valid_deterministic_and_rounded(qmap, state):
    status, body = standin.respond({"state": state, "model": "m", "questions": qmap})
    assert status == 200
    document = spec.parse(qmap, limits=spec.DEFAULT_LIMITS)
    checked = answers.check_response(document, body)
    assert set(checked.answers) == set(qmap)
    assert standin.respond({"state": state, "model": "m", "questions": qmap}) == (status, body)
    for answer in body["answers"].values():
        for p in answer.get("probabilities", {}).values():
            assert round(p, 2) == p
    assert "not Jev" in body["model"]


def test_the_stand_in_refuses_what_the_provider_refuses():
    assert standin.respond({"questions": {}})[0] == 422
    status, body = standin.respond(
        {"state": 1, "model": "m", "questions": {"q": {"type": "choice", "criteria": {"a": 1}}}}
    )
    assert status == 422 and body["detail"][0]["loc"][:3] == ["body", "questions", "q"]


def test_the_stand_in_over_http_needs_its_key(stand_in):
    import httpx

    url = f"http://127.0.0.1:{stand_in.server_address[1]}/v1/systemone"
    assert httpx.post(url, json=DOCUMENT).status_code == 401
    assert httpx.post(url, json=DOCUMENT, headers={"Authorization": "Bearer x"}).status_code == 401
    response = httpx.post(url, json=DOCUMENT, headers={"Authorization": f"Bearer {standin.KEY}"})
    assert response.status_code == 200
    assert response.headers["x-typesafe-request-id"].startswith("standin-")


# --- questions ask --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ask_from_files_then_replay_it_recorded(stand_in, tmp_path):
    doc_file = write(tmp_path, DOCUMENT["questions"], "q.json")
    state_file = write(tmp_path, json.dumps(DOCUMENT["state"]), "s.json")
    code, out, _ = run("ask", "--file", doc_file, "--state-file", state_file)
    assert code == 0
    live = json.loads(out)
    assert set(live) >= {"model", "answers", "usage", "cost", "timing", "backend"}
    assert live["backend"] == "typesafe" and set(live["answers"]) == set(DOCUMENT["questions"])
    assert live["timing"]["total_ms"] >= live["timing"]["provider_ms"]
    code, out, _ = run(
        "ask", "--file", doc_file, "--state-file", state_file, "--backend", "recorded"
    )
    assert code == 0
    assert json.loads(out)["answers"] == live["answers"]
    assert Decision.objects.count() == 1


@pytest.mark.django_db
def test_a_null_state_file_is_a_value_the_providers_wire_refuses_before_a_call(stand_in, tmp_path):
    code, out, _ = run(
        "ask",
        "--file",
        write(tmp_path, DOCUMENT, "body.json"),
        "--state-file",
        write(tmp_path, "null", "s.json"),
        "--json",
    )
    assert (code, json.loads(out)["status"]) == (1, 422)
    assert "a string, an object or an array" in json.loads(out)["provider_detail"]
    assert not Decision.objects.exists()


@pytest.mark.django_db
def test_ask_from_the_database(stand_in):
    user = factories.author("writer")
    qs = factories.question_set("s", owner=user, doc=DOCUMENT["questions"])
    services.sample_state_create(
        question_set=qs, name="payouts", state=DOCUMENT["state"], author=user
    )
    code, _out, _ = run("ask", "--set", "s", "--state", "payouts")
    assert code == 0
    decision = Decision.objects.get()
    assert decision.version.number == 1 and decision.sample_state.name == "payouts"
    assert run("ask", "--set", "s", "--version", "7", "--state", "payouts")[0] == 1
    assert run("ask", "--set", "s", "--state", "nope", "--json")[0] == 1


@pytest.mark.django_db
def test_ask_failures_print_the_mapped_status(settings, tmp_path):
    settings.TYPESAFE_API_KEY = ""
    doc = write(tmp_path, DOCUMENT)
    state = write(tmp_path, '"one"', "s.json")
    code, out, _ = run("ask", "--file", doc, "--state-file", state, "--json")
    assert code == 1
    assert json.loads(out) == {
        "status": 503,
        "detail": "Decisions through typesafe need TYPESAFE_API_KEY in the console's environment.",
    }
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{s.getsockname()[1]}"
    settings.TYPESAFE_API_KEY = "k-123456"
    code, out, _ = run("ask", "--file", doc, "--state-file", state, "--json")
    assert (code, json.loads(out)["status"]) == (1, 502)
    bad = write(tmp_path, {"q": {"type": "score", "criteria": ["x"]}}, "bad.json")
    code, out, _ = run("ask", "--file", bad, "--state-file", state, "--json")
    assert (code, json.loads(out)["status"]) == (1, 422)
    assert "Nothing was sent" in json.loads(out)["detail"]
    assert run("ask", "--file", doc, "--state", "x")[0] == 2


# --- the preview partial and its charts -----------------------------------------------------------


@pytest.fixture
def editor(client):
    user = factories.author("writer")
    client.force_login(user)
    qs = factories.question_set("s", owner=user, doc=DOCUMENT["questions"])
    sample = services.sample_state_create(
        question_set=qs, name="payouts", state=DOCUMENT["state"], author=user
    )
    return client, factories.draft(qs), sample


@pytest.mark.django_db
def test_preview_asks_the_stand_in_and_renders_bars(stand_in, editor):
    client, version, sample = editor
    url = reverse("version-preview", args=["s", version.number])
    response = client.post(
        url,
        {"preview_state": sample.pk, "preview_backend": "typesafe"},
        headers={"HX-Request": "true"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert body.count("<svg") == 4  # choice, noul, score bars and the score axis
    assert "local-stand-in (not Jev)" in body
    for label in ("provider_ms", "total_ms", "cost", "usage", "input_tokens"):
        assert label in body
    decision = Decision.objects.get()
    assert decision.sample_state.name == "payouts" and decision.user.username == "writer"
    replay = client.post(url, {"preview_state": sample.pk, "preview_backend": "recorded"})
    assert "no call made" in replay.content.decode()


@pytest.mark.django_db
def test_preview_errors_say_what_to_do(settings, editor):
    client, version, sample = editor
    settings.TYPESAFE_API_KEY = ""
    url = reverse("version-preview", args=["s", version.number])
    body = client.post(
        url, {"preview_state": sample.pk, "preview_backend": "typesafe"}
    ).content.decode()
    assert "503" in body and "TYPESAFE_API_KEY" in body
    body = client.post(
        url, {"preview_state": "", "preview_state_json": "{oops", "preview_backend": "recorded"}
    ).content.decode()
    assert "not JSON" in body
    body = client.post(
        url, {"preview_state": "", "preview_state_json": "null", "preview_backend": "recorded"}
    ).content.decode()
    assert "404" in body and "Nothing recorded" in body


@pytest.mark.django_db
def test_the_banner_says_answers_come_from_the_stand_in(client, settings):
    client.force_login(factories.user())
    settings.DECISIONS_STANDIN = True
    body = client.get(reverse("set-list")).content.decode()
    assert "Answers come from the local stand-in, not from Jev." in body
    assert standin.HOW_IT_ANSWERS in body and "word overlap" in standin.HOW_IT_ANSWERS
    assert "TYPESAFE_API_KEY" in body
    settings.DECISIONS_STANDIN = False
    assert "local stand-in" not in client.get(reverse("set-list")).content.decode()


@pytest.mark.parametrize("n", [2, 255])
def test_choice_charts_keep_declared_order_and_stay_readable(n):
    names = [f"option_{i}" for i in range(n)]
    doc = spec.parse(
        {"c": {"type": "choice", "criteria": {k: f"words {k}" for k in names}}},
        limits=spec.DEFAULT_LIMITS,
    )
    _status, body = standin.respond(
        {"state": None, "model": "m", "questions": doc.questions_json()}
    )
    answer = body["answers"]["c"]
    svg = str(charts.choice_bar_chart("c", answer, names))
    positions = [
        svg.index(f">{name}<") if f">{name}<" in svg else svg.index(f"▶ {name}<") for name in names
    ]
    assert positions == sorted(positions)
    assert svg.count('class="track"') == n
    assert f"{answer['probabilities'][names[-1]]:.2f}" in svg
    height = float(svg.split('height="')[1].split('em"')[0])
    assert height >= n * 1.25  # at least 1.25 em a row (the text's height), however many
    assert "viewBox" not in svg  # its text is drawn at the page's size, never scaled down


def test_chart_labels_are_shortened_never_cut_and_keep_the_level_number():
    legend = {"0": "Can wait: routine request, nothing at stake for anyone", "3": "Urgent"}
    answer = {
        "type": "score",
        "score": 0.2,
        "confidence": 0.5,
        "probabilities": {"0": 0.7, "1": 0.1, "2": 0.1, "3": 0.1},
        "legend": legend,
    }
    svg = str(charts.score_bar_chart("u", answer, 4))
    assert "▶ 0 Can wait: routine request, noth…<" in svg  # the level number stays
    assert f"0 {legend['0']}: 0.70" in svg  # the whole label in the bar's title
    assert 'text-anchor="end"' in svg and 'x="100%"' in svg  # values at the card's edge


def test_a_structured_level_in_the_legend_is_charted_by_its_words():
    """A provider echoes a structured level as it was asked (the stand-in too): the chart's label
    reads its words, or its JSON when it has no words the console knows."""
    levels = [
        "none",
        {"what": "reads only", "examples": ["ls -la"]},
        {"label": "writes", "signals": ["rm"]},
        {"irreversible": True},
    ]
    doc = spec.parse({"risk": {"type": "score", "criteria": levels}}, limits=spec.DEFAULT_LIMITS)
    _, body = standin.respond({"state": 1, "model": "m", "questions": doc.questions_json()})
    assert list(body["answers"]["risk"]["legend"].values()) == levels
    svg = str(charts.score_bar_chart("risk", body["answers"]["risk"], 4))
    assert "1 reads only ls -la<" in svg and "2 writes rm<" in svg
    assert "3 {&quot;irreversible&quot;: true}" in svg and "&#x27;" not in svg


def test_a_noul_chart_shows_p_true_against_p_false():
    svg = str(charts.noul_bar_chart("n", {"type": "noul", "noul": 0.3}))
    assert ">P(true)<" in svg and "▶ P(false)<" in svg
    assert ">0.30<" in svg and ">0.70<" in svg


def test_score_chart_marks_the_fractional_score_on_the_axis():
    answer = {
        "type": "score",
        "score": 4.5,
        "confidence": 0.3,
        "probabilities": {str(i): 0.1 for i in range(10)},
        "legend": {str(i): f"level {i}" for i in range(10)},
    }
    svg = str(charts.score_bar_chart("s", answer, 10))
    assert svg.count('class="track"') == 10
    assert "4.50" in svg and 'class="marker"' in svg
    assert "score 4.50 on the 0 to 9 axis" in svg


def test_chart_text_is_escaped():
    answer = {
        "type": "choice",
        "choice": "<b>",
        "confidence": 1,
        "probabilities": {"<b>": 1, "x": 0},
    }
    svg = str(charts.choice_bar_chart("<q>", answer, ["<b>", "x"]))
    assert "<b>" not in svg and "&lt;b&gt;" in svg


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=10))
def test_any_level_count_charts(levels):
    doc = spec.parse(
        {"s": {"type": "score", "criteria": [f"l{i}" for i in range(levels)]}},
        limits=spec.DEFAULT_LIMITS,
    )
    _, body = standin.respond({"state": 1, "model": "m", "questions": doc.questions_json()})
    svg = str(charts.chart_for(doc.questions["s"], body["answers"]["s"]))
    assert svg.count('class="track"') == levels


@pytest.mark.parametrize("n", [2, 3, 22, 255])
def test_the_stand_ins_rounding_sums_to_one_and_never_goes_below_zero(n):
    flat = standin._rounded([1 / n] * n)
    assert round(sum(flat), 9) == 1 and min(flat) >= 0
    assert all(round(p, 2) == p for p in flat)
