"""Code that calls the approved set (`questions snippet`, the label's export page): each snippet
is run — curl, Python (httpx) and, with node, TypeScript against a loopback runtime; the SDK one
against a loopback provider — and what it sends is the export's `questions` map exactly (the
same keys in the same order, the same values), with the placeholder state, the token from the
environment, and the answers printed. And each runs unchanged against the local stand-in as
`make run` starts it (the runtime's `POST /api/decisions` and the provider's wire, in the
environment the export page names), the SDK one pinned to the model that answered the run the
version was approved on, and gets the stand-in's answers."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from django.core.management.base import CommandError
from django.test import Client

from questions import exports, roles, services
from questions.core import ingest, snippets, spec
from questions.dev import standin
from questions.models import IngestDay, QuestionSet, SampleState, Version
from tests import factories
from tests.helpers import wait_for
from tests.providers import (
    KEY,
    Provider,
    StandInRuntime,
    answer_all,
    exported_variables,
    run_cli,
    run_snippet,
)

pytestmark = pytest.mark.django_db

#: what a snippet must carry byte for byte: integer-like option names (a JavaScript object
#: literal puts them first), `__proto__`, quotes, backslashes, backticks, `${`, three
#: apostrophes and three quotes, a shell's `$` and `'`, non-ASCII and a line separator,
#: structured entries, an empty noul criteria, and no key in sorted order
TRICKY = {
    "zeta": {
        "type": "choice",
        "instructions": 'Which one? It\'s `ticket`: "quoted", back\\slash, ${not}, '
        "'''x''' \"\"\" $HOME",
        "criteria": {
            "2": "two",
            "10": "ten",
            "__proto__": {"what": "the prototype", "examples": ["a", "b"]},
            "none": None,
        },
    },
    "alpha": {"type": "noul", "instructions": "Zoë ☃ 日本語\u2028 next line?", "criteria": {}},
    "mid": {
        "criteria": ["calm", {"what": "annoyed", "not_for": "mild"}, "furious"],
        "type": "score",
        "instructions": {"rubric": "tone", "data": "`ticket`"},
    },
}


@pytest.fixture
def approved():
    """Set `t` with TRICKY approved under `production`; its export document."""
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("t", owner=writer, doc=TRICKY)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    return exports.export_document(Version.objects.get(pk=version.pk))


@pytest.fixture
def runtime():
    provider = Provider(default=lambda body: {**answer_all(body), "timing": {"total_ms": 1}})
    yield provider
    provider.stop()


def pairs(raw: bytes | str):
    """A JSON text with every object as its list of (key, value) pairs, in order."""
    return json.loads(raw, object_pairs_hook=list)


def snippet_of(language: str) -> str:
    code, out, err = run_cli("snippet", "--set", "t", "--label", "production", "--lang", language)
    assert code == 0, err
    return out


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def sent_as_exported(runtime: Provider, export: dict) -> None:
    [request] = runtime.requests
    assert request["path"] == "/api/decisions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    sent = pairs(request["raw"])
    assert [k for k, _ in sent] == ["state", "questions"]
    assert dict(sent)["questions"] == pairs(json.dumps(export["questions"]))
    assert json.loads(request["raw"])["state"] == snippets.PLACEHOLDER_STATE


def test_the_curl_snippet_sends_the_exported_bytes(approved, runtime, tmp_path):
    code = snippet_of("curl")
    script = tmp_path / "decide.sh"
    script.write_text(code)
    done = run(["sh", str(script)], {"RUNTIME_URL": runtime.url + "/", "RUNTIME_TOKEN": KEY})
    assert done.returncode == 0, done.stderr
    sent_as_exported(runtime, approved)
    assert json.loads(done.stdout)["answers"].keys() == TRICKY.keys()
    # the questions block of the body is the export document's, byte for byte
    body = runtime.requests[0]["raw"].decode()
    block = body[body.index('"questions": ') : body.rindex("}")]
    assert block in exports.export_text(approved)


def test_the_python_snippet_sends_the_exported_map_and_prints_the_answers(
    approved, runtime, tmp_path
):
    script = tmp_path / "decide.py"
    script.write_text(snippet_of("python"))
    done = run([sys.executable, str(script)], {"RUNTIME_URL": runtime.url, "RUNTIME_TOKEN": KEY})
    assert done.returncode == 0, done.stderr
    sent_as_exported(runtime, approved)
    assert json.loads(done.stdout) == answer_all({"questions": TRICKY})["answers"]


def test_a_snippet_without_its_environment_says_what_to_set(approved, tmp_path):
    script = tmp_path / "decide.py"
    script.write_text(snippet_of("python"))
    done = run([sys.executable, str(script)], {})
    assert done.returncode == 1 and "Set RUNTIME_URL and RUNTIME_TOKEN" in done.stderr


def test_the_python_snippet_prints_the_runtimes_refusal(approved, runtime, tmp_path):
    runtime.reply(503, {"detail": "Decisions need TYPESAFE_API_KEY on the runtime"})
    script = tmp_path / "decide.py"
    script.write_text(snippet_of("python"))
    done = run([sys.executable, str(script)], {"RUNTIME_URL": runtime.url, "RUNTIME_TOKEN": KEY})
    assert done.returncode == 1 and "503" in done.stderr and "TYPESAFE_API_KEY" in done.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_typescript_snippet_runs_under_node_and_sends_the_exported_text(
    approved, runtime, tmp_path
):
    script = tmp_path / "decide.mjs"  # no TypeScript-only syntax: node runs it as a module
    script.write_text(snippet_of("typescript"))
    done = run(["node", str(script)], {"RUNTIME_URL": runtime.url, "RUNTIME_TOKEN": KEY})
    assert done.returncode == 0, done.stderr
    sent_as_exported(runtime, approved)
    assert json.loads(done.stdout) == answer_all({"questions": TRICKY})["answers"]
    raw = runtime.requests[0]["raw"].decode()
    assert snippets.questions_text(approved["questions"]) in raw  # the very text, not rebuilt


def test_the_typescript_snippet_holds_the_questions_text_in_a_template_literal(approved):
    code = snippet_of("typescript")
    literal = re.search(r"const QUESTIONS = `(.*?)`;\n", code, re.S).group(1)
    unescaped = re.sub(r"\\(.)", r"\1", literal, flags=re.S)  # a template literal's escapes
    assert unescaped == snippets.questions_text(approved["questions"])
    assert code.count("{") == code.count("}") and code.count("(") == code.count(")")


def test_the_sdk_snippet_asks_the_provider_through_the_official_sdk(approved, tmp_path):
    provider = Provider(default=answer_all)
    try:
        script = tmp_path / "decide_direct.py"
        script.write_text(snippet_of("sdk"))
        done = run(
            [sys.executable, str(script)],
            {"TYPESAFE_API_KEY": KEY, "TYPESAFE_BASE_URL": provider.url},
        )
    finally:
        provider.stop()
    assert done.returncode == 0, done.stderr
    [request] = provider.requests
    assert request["path"] == "/v1/systemone"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    sent = dict(pairs(request["raw"]))
    assert sent["questions"] == pairs(json.dumps(approved["questions"]))
    assert sent["model"] == approved["model"]
    assert json.loads(done.stdout)["zeta"]["choice"] == "2"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--set", "t", "--label", "staging"], "no label 'staging'"),
        (["--set", "nope", "--label", "production"], "There is no set nope."),
    ],
)
def test_a_snippet_of_no_approved_label_is_refused(approved, args, words):
    code, out, err = run_cli("snippet", *args, "--lang", "curl")
    assert code == 1 and words in err and out == ""
    code, out, _ = run_cli("snippet", *args, "--lang", "curl", "--json")
    assert code == 1 and json.loads(out)["status"] == 404


def test_an_unknown_language_is_an_unusable_argument(approved):
    with pytest.raises(CommandError, match="invalid choice: 'go'"):
        run_cli("snippet", "--set", "t", "--label", "production", "--lang", "go")
    with pytest.raises(snippets.UnknownLanguage, match="one of curl, python"):
        snippets.snippet("go", approved)


def test_the_export_page_shows_every_snippet_with_a_copy_button(approved):
    client = Client()
    client.force_login(factories.user("viewer"))
    response = client.get("/sets/t/labels/production/export/")
    assert response.status_code == 200
    page = response.content.decode()
    for language in snippets.LANGUAGES:
        code = snippets.snippet(language, approved, "production")
        assert html.escape(code) in page
        assert f'data-copy="#snippet-{language}"' in page
        assert f'id="tab-{language}"' in page
    assert "/api/sets/t/export.json?label=production" in page
    assert client.get("/sets/t/labels/staging/export/").status_code == 404
    set_page = client.get("/sets/t/").content.decode()
    assert 'href="/sets/t/labels/production/export/"' in set_page


@pytest.mark.parametrize(("who", "linked"), [("author", False), ("reviewer", True)])
def test_the_export_page_links_tokens_only_for_who_may_manage_them(approved, who, linked):
    client = Client()
    client.force_login(getattr(factories, who)(f"a-{who}"))
    page = client.get("/sets/t/labels/production/export/").content.decode()
    assert ('href="/tokens/">API token</a>' in page) is linked
    assert ("a reviewer makes the runtime's token" in page) is not linked
    assert client.get("/tokens/").status_code == (200 if linked else 403)


# --- the model the SDK snippet pins ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("answered_by", "pinned", "words"),
    [
        ("jev-1.13.0", "jev-1.13.0", "# the model that answered the run this version was approved"),
        (["jev-1.12.0", "jev-1.13.0"], "jev-latest", '("jev-1.12.0", "jev-1.13.0"): the model'),
        (None, "jev-latest", "# no model is on record as answering the run"),
    ],
)
def test_the_sdk_snippet_pins_the_model_that_answered_the_approval_run(
    approved, answered_by, pinned, words
):
    export = {**approved, "model": "jev-latest", "answered_by": answered_by}
    code = snippets.snippet("sdk", export, "production")
    assert f"MODEL = {pinned!r}\n" in code and words in code
    assert snippets.pinned_model(export)[0] == pinned
    compile(code, "decide_direct.py", "exec")  # a model's name cannot break the code


def test_a_models_name_stays_inside_its_comment_and_its_string():
    export = {
        "question_set": "t",
        "version": 1,
        "sha256": "0" * 64,
        "model": "jev-latest",
        "questions": TRICKY,
    }
    for answered in ('evil"\nimport os', ["a\nimport os", "b"]):
        code = snippets.snippet("sdk", {**export, "answered_by": answered})
        compile(code, "decide_direct.py", "exec")
        assert "\nimport os" not in code


# --- every snippet against the local stand-in -------------------------------------------------


@pytest.fixture
def local(settings):
    """The stand-in as `make run` starts it (the provider's wire and the runtime's), the
    console's typesafe backend pointed at it, and TRICKY approved under `production` on a run
    the stand-in answered."""
    runtime = StandInRuntime()
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = standin.KEY, runtime.url
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("t", owner=writer, doc=TRICKY)
    services.sample_state_create(question_set=qs, name="s0", state={"n": 10}, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    batch = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(batch.pk)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    yield runtime
    runtime.stop()


def stand_in_answers() -> dict:
    """What the stand-in answers TRICKY about the placeholder state."""
    parsed = spec.parse(TRICKY, limits=spec.DEFAULT_LIMITS).questions
    return {qid: standin.answer(q, snippets.PLACEHOLDER_STATE) for qid, q in parsed.items()}


RUNTIME_SNIPPETS = [
    "curl",
    "python",
    pytest.param(
        "typescript",
        marks=pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", RUNTIME_SNIPPETS)
def test_each_runtime_snippet_runs_unchanged_against_the_local_stand_in(local, language, tmp_path):
    printed, _ = run_snippet(language, snippet_of(language), local.environment, tmp_path)
    assert printed == stand_in_answers()


@pytest.mark.django_db(transaction=True)
def test_the_sdk_snippet_runs_against_the_local_stand_in_pinned_to_its_model(local, tmp_path):
    assert exports.export_document(Version.objects.get())["answered_by"] == standin.MODEL
    code = snippet_of("sdk")
    assert f"MODEL = {standin.MODEL!r}\n" in code
    printed, _ = run_snippet("sdk", code, local.environment, tmp_path)
    wanted = stand_in_answers()
    assert list(printed) == list(wanted)
    for qid, answer in printed.items():
        kind = wanted[qid]["type"]
        assert (answer["type"], answer[kind]) == (kind, wanted[qid][kind])


@pytest.mark.django_db(transaction=True)
def test_the_curl_snippet_prints_the_runtimes_refusal_of_questions_changed_since(local, tmp_path):
    code = snippet_of("curl").replace('"two"', '"deux"')  # an option described otherwise
    script = tmp_path / "decide.sh"
    script.write_text(code)
    done = run(["sh", str(script)], local.environment)
    assert done.returncode == 22  # curl's --fail-with-body
    assert json.loads(done.stdout)["detail"] == (
        "Not the questions of an approved export: t v1 holds 2 of the 3 asked; `zeta` is not "
        "as t v1 approved it (changed since?)."
    )


@pytest.mark.parametrize("on", [True, False])
def test_the_export_page_names_the_local_address_and_key_when_the_stand_in_is_on(
    approved, settings, on
):
    settings.DECISIONS_STANDIN, settings.TYPESAFE_BASE_URL = on, "http://127.0.0.1:8765"
    client = Client()
    client.force_login(factories.user("viewer"))
    page = client.get("/sets/t/labels/production/export/").content.decode()
    shown = snippets.local_environment("http://127.0.0.1:8765", standin.KEY)
    assert (html.escape(shown) in page) is on
    assert ('data-copy="#local-environment"' in page) is on
    assert exported_variables(shown) == {
        "RUNTIME_URL": "http://127.0.0.1:8765",
        "RUNTIME_TOKEN": standin.KEY,
        "TYPESAFE_API_KEY": standin.KEY,
        "TYPESAFE_BASE_URL": "http://127.0.0.1:8765",
    }


# --- the report to the console ----------------------------------------------------------------


def _unkept_rate(state) -> int:
    """A sampling rate at which the console does not keep `state` (1 in N by its hash)."""
    digest = spec.state_sha256(state)
    return next(n for n in range(2, 100) if not ingest.sampled_in(digest, n))


@pytest.fixture
def reporting(local, live_server):
    """The local stand-in's environment plus the console (a live server) and an ingest token
    for set `t`, as the application would report with."""
    _, raw = services.api_token_create(name="app", user=roles.OPERATOR, scope="ingest", sets=["t"])
    return {**local.environment, "CONSOLE_URL": live_server.url, "CONSOLE_INGEST_TOKEN": raw}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", RUNTIME_SNIPPETS)
def test_each_runtime_snippet_reports_its_decision_to_the_console(reporting, language, tmp_path):
    printed, _ = run_snippet(language, snippet_of(language), reporting, tmp_path)
    wait_for(
        lambda: SampleState.objects.filter(source="production").exists(),
        30,
        f"the {language} snippet's report",
    )
    stored = SampleState.objects.get(source="production")
    assert stored.state == snippets.PLACEHOLDER_STATE
    assert stored.production_answers == json.loads(json.dumps(printed))
    assert (stored.production_version, stored.production_label) == (1, "production")
    assert stored.expected == {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["python", RUNTIME_SNIPPETS[2]])
def test_a_snippet_sends_no_report_the_console_would_not_keep(reporting, language, tmp_path):
    rate = _unkept_rate(snippets.PLACEHOLDER_STATE)
    services.ingest_configure(
        question_set=QuestionSet.objects.get(), user=roles.OPERATOR, keep_one_in=rate
    )
    code = snippet_of(language)
    assert f"1 state in {rate}, by the state's hash" in code
    printed, _ = run_snippet(language, code, reporting, tmp_path)
    assert printed == stand_in_answers()
    assert not IngestDay.objects.exists()  # not sent at all: nothing received


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", RUNTIME_SNIPPETS)
def test_a_console_that_refuses_or_is_gone_never_fails_the_decision(local, language, tmp_path):
    gone = {**local.environment, "CONSOLE_URL": "http://127.0.0.1:9", "CONSOLE_INGEST_TOKEN": "x"}
    printed, _ = run_snippet(language, snippet_of(language), gone, tmp_path)
    assert printed == stand_in_answers()
