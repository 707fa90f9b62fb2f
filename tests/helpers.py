"""What several test modules share: the roles, every endpoint with the roles it allows, the
form data that gets past each endpoint's own checks, a world to run them in, and a signed-in
client per role; the editor's form fields as a browser would send them; files for the CLI; the
export's JSON Schema; hand-made answers and runs; and the task worker run until a condition."""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse
from django_tasks_db.management.commands.db_worker import Worker

from questions import selectors, services
from questions.models import Version, WebhookDelivery
from tests import factories

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"

ROLES = ("anonymous", "viewer", "author", "reviewer", "staff")
A, V, AU, R, S = ROLES

# (name, method, path template, roles allowed). Everyone signed in reads; authors write;
# reviewers review, label and manage tokens; both ask live backends and comment; staff manage
# tokens; the API takes tokens only.
SIGNED_IN = {V, AU, R, S}
MATRIX = [
    ("sets", "get", "/", SIGNED_IN),
    ("check page", "get", "/check/", SIGNED_IN),
    ("check", "post", "/check/", SIGNED_IN),
    ("new set page", "get", "/sets/new/", {AU}),
    ("new set", "post", "/sets/new/", {AU}),
    ("set page", "get", "/sets/s/", SIGNED_IN),
    ("history", "get", "/sets/s/history/", SIGNED_IN),
    ("diff", "get", "/sets/s/diff/", SIGNED_IN),
    ("editor", "get", "/sets/s/v3/", SIGNED_IN),
    ("save", "post", "/sets/s/v3/save/", {AU}),
    ("validate", "post", "/sets/s/v3/validate/", SIGNED_IN),
    ("card", "get", "/sets/s/v3/card/", {AU}),
    ("json view", "get", "/sets/s/v3/json/", SIGNED_IN),
    ("json replace", "post", "/sets/s/v3/json/", {AU}),
    ("preview", "post", "/sets/s/v3/preview/", SIGNED_IN),  # recordings are a read
    ("live preview", "post", "/sets/s/v3/preview/", {AU, R}),
    ("submit", "post", "/sets/s/v3/submit/", {AU}),
    ("discard", "post", "/sets/s/v3/discard/", {AU}),
    ("new draft", "post", "/sets/s/v1/new-draft/", {AU}),
    ("review page", "get", "/sets/s/v2/review/", SIGNED_IN),
    ("approve", "post", "/sets/s/v2/review/", {R}),
    ("request changes", "post", "/sets/s/v2/review/", {R}),
    ("comment", "post", "/sets/s/v2/review/", {AU, R}),
    ("move label", "post", "/sets/s/labels/", {R}),
    ("download export", "get", "/sets/s/v1/export.json", SIGNED_IN),
    ("review queue", "get", "/reviews/", SIGNED_IN),
    ("tokens", "get", "/tokens/", {R, S}),
    ("create token", "post", "/tokens/", {R, S}),
    ("new state page", "get", "/sets/s/states/new/", {AU}),
    ("new state", "post", "/sets/s/states/new/", {AU}),
    ("state page", "get", "/sets/s/states/{state}/", SIGNED_IN),
    ("save state", "post", "/sets/s/states/{state}/", {AU}),
    ("state check", "post", "/sets/s/states/check/", SIGNED_IN),
    ("duplicate state", "post", "/sets/s/states/{state}/duplicate/", {AU}),
    ("delete state", "post", "/sets/s/states/{state}/delete/", {AU}),
    ("state history", "get", "/sets/s/states/{state}/history/", SIGNED_IN),
    ("start run", "post", "/sets/s/v1/runs/", {AU, R}),
    ("run page", "get", "/runs/{run}/", SIGNED_IN),
    ("cancel run", "post", "/runs/{run}/cancel/", {AU, R}),
    ("rerun failed", "post", "/runs/{run}/rerun-failed/", {AU, R}),
    ("controls page", "get", "/sets/s/controls/", SIGNED_IN),
    ("start control", "post", "/sets/s/controls/start/", {AU, R}),
    ("start drift", "post", "/sets/s/drift/start/", {AU, R}),
    ("compare", "get", "/sets/s/compare/", SIGNED_IN),
    ("advice page", "get", "/sets/s/v3/advice/", SIGNED_IN),
    ("save advice", "post", "/sets/s/v3/advice/", {AU}),
    ("webhooks", "get", "/sets/s/webhooks/", {R}),
    ("add webhook", "post", "/sets/s/webhooks/", {R}),
    ("test webhook", "post", "/sets/s/webhooks/{hook}/test/", {R}),
    ("delete webhook", "post", "/sets/s/webhooks/{hook}/delete/", {R}),
    ("schema", "get", "/schemas/question-set-1.json", set(ROLES)),
    ("api export", "get", "/api/sets/s/export.json?label=production", set()),
]

POST_DATA = {
    "approve": {"action": "approve", "confirm_weak": "yes"},
    "request changes": {"action": "request_changes", "note": "more words"},
    "comment": {"action": "comment", "note": "seen"},
    "move label": {"name": "staging", "version": "1"},
    "new set": {"name": "Other", "slug": "other"},
    "create token": {"name": "runtime"},
    "new state": {"name": "n2", "state": "1", "base_revision": "0"},
    "save state": {"name": "n", "state": "2", "base_revision": "1"},
    "preview": {"preview_backend": "recorded", "preview_state": "", "preview_state_json": "1"},
    "live preview": {"preview_backend": "typesafe", "preview_state": "", "preview_state_json": "1"},
    "check": {"document": "{}"},
    "start run": {"backend": "recorded"},
    "start control": {"version": "1", "kind": "shuffle", "count": "2", "backend": "typesafe"},
    "start drift": {"label": "production", "model": "m-new"},
    "save advice": {"advice-0": "0.5"},
    "add webhook": {"url": "https://runtime.example/hooks", "description": "runtime"},
    "state check": {"state": "1"},
}


def make_world() -> dict[str, int]:
    """A set with v1 approved under `production`, v2 in review and v3 an open draft."""
    writer = factories.author("writer")
    checker = factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(version=v1, reviewer=checker, label="production")
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)
    services.version_draft_from(version=v2, author=writer)
    state = services.sample_state_create(question_set=qs, name="n", state=1, author=writer)
    run = services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    hook, _ = services.webhook_create(
        question_set=qs, url="http://127.0.0.1:9/hooks", user=checker
    )  # nothing is sent: no worker runs in these tests
    return {"state": state.pk, "run": run.pk, "hook": hook.pk}


def client_for(role: str) -> Client:
    client = Client()
    if role == A:
        return client
    user = {
        V: lambda: factories.user(f"{role}-user"),
        AU: lambda: factories.author(f"{role}-user"),
        R: lambda: factories.reviewer(f"{role}-user"),
        S: lambda: get_user_model().objects.create_user(f"{role}-user", is_staff=True),
    }[role]()
    client.force_login(user)
    return client


def token_form(client: Client) -> dict[str, str]:
    """What the tokens page's create form carries besides the name: its one-time value (the
    page hands one out each time it is shown; a form sent twice makes no second token)."""
    client.get("/tokens/")
    return {"once": client.session["token_form"]}


def write(tmp_path: Path, value, name: str = "doc.json") -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


class FormFields(HTMLParser):
    """The controls a browser submits with form `editor` (form= attribute or inside it), in
    document order, as a browser sends them: textarea newlines as CRLF, the first newline after
    <textarea> dropped, nothing from <template> or disabled fieldsets."""

    def __init__(self, form_id: str = "editor"):
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.pairs: list[tuple[str, str]] = []
        self._template = 0
        self._disabled = 0
        self._in_form = 0
        self._textarea: tuple[str, list[str]] | None = None
        self._select: tuple[str, str | None, str | None] | None = None

    def _mine(self, attrs: dict) -> bool:
        return (attrs.get("form") == self.form_id or self._in_form) and not (
            self._template or self._disabled
        )

    def handle_starttag(self, tag, attrs_list):
        attrs = dict(attrs_list)
        if tag == "template":
            self._template += 1
        elif tag == "fieldset" and "disabled" in attrs:
            self._disabled += 1
        elif tag == "form" and attrs.get("id") == self.form_id:
            self._in_form += 1
        elif tag == "input" and self._mine(attrs) and attrs.get("name"):
            if attrs.get("type") not in ("submit", "button", "checkbox", "radio"):
                value = attrs.get("value") or ""
                if attrs.get("type") != "hidden":
                    value = value.replace("\r", "").replace("\n", "")
                self.pairs.append((attrs["name"], value))
        elif tag == "textarea" and self._mine(attrs) and attrs.get("name"):
            self._textarea = (attrs["name"], [])
        elif tag == "select" and self._mine(attrs) and attrs.get("name"):
            self._select = (attrs["name"], None, None)
        elif tag == "option" and self._select:
            name, first, chosen = self._select
            value = attrs.get("value", "")
            self._select = (
                name,
                first if first is not None else value,
                value if "selected" in attrs else chosen,
            )

    def handle_endtag(self, tag):
        if tag == "template":
            self._template -= 1
        elif tag == "fieldset" and self._disabled:
            self._disabled -= 1
        elif tag == "form" and self._in_form:
            self._in_form -= 1
        elif tag == "textarea" and self._textarea:
            name, parts = self._textarea
            text = "".join(parts)
            text = text[1:] if text.startswith("\n") else text
            self.pairs.append((name, text.replace("\r\n", "\n").replace("\n", "\r\n")))
            self._textarea = None
        elif tag == "select" and self._select:
            name, first, chosen = self._select
            self.pairs.append((name, chosen if chosen is not None else first or ""))
            self._select = None

    def handle_data(self, data):
        if self._textarea:
            self._textarea[1].append(data)


def fields_of(html: str) -> list[tuple[str, str]]:
    parser = FormFields()
    parser.feed(html)
    return parser.pairs


def as_post(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    data: dict[str, list[str]] = {}
    for name, value in pairs:
        data.setdefault(name, []).append(value)
    return data


def editor_url(version: Version, name: str = "version-edit") -> str:
    return reverse(name, args=[version.question_set.slug, version.number])


def draft_with(client, document: dict) -> Version:
    qs = factories.question_set(owner=client.user)
    version = factories.draft(qs)
    return services.version_save(
        version=version, document=document, base_revision=1, author=client.user
    )


def execute_closing(run_id: int) -> None:
    """`batch_execute` in a thread of its own, closing that thread's connection after."""
    try:
        services.batch_execute(run_id)
    finally:
        connection.close()


SCHEMA = json.loads(selectors.EXPORT_SCHEMA_PATH.read_text())


def validate_export(document: dict) -> None:
    jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(document)


#: the comparison tests' question map (choice, noul and score), and their hand-made answers
COMPARE_DOC = {
    "desk": {"type": "choice", "criteria": {"billing": "money", "tech": "bugs", "other": "else"}},
    "urgent": {"type": "noul", "instructions": "Urgent?"},
    "level": {"type": "score", "criteria": ["low", "mid", "high"]},
}


def desk(chosen, p):
    probabilities = {"billing": 0.0, "tech": 0.0, "other": 0.0} | p
    return {"type": "choice", "choice": chosen, "probabilities": probabilities, "confidence": 0.5}


def answers(desk_answer, urgent, level):
    return {
        "desk": desk_answer,
        "urgent": {"type": "noul", "noul": urgent},
        "level": {
            "type": "score",
            "score": level,
            "confidence": 0.5,
            "probabilities": {"0": 0, "1": 1, "2": 0},
        },
    }


TYPESAFE_DOCUMENT = json.loads((EXAMPLES_DIR / "typesafe-request.json").read_text())


#: the advice tests' question map: a noul, a choice and a score
ADVICE_DOC = {
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "tech": "bugs", "other": "anything else"},
    },
    "anger": {"type": "score", "criteria": ["calm", "angry"]},
}


#: (state name, expected urgent, P(true), expected desk, chosen desk, confidence)
LABELLED = [
    ("a", True, 0.9, "billing", "billing", 0.9),
    ("b", True, 0.6, "tech", "tech", 0.7),
    ("c", False, 0.55, "billing", "tech", 0.4),
    ("d", False, 0.2, "other", "other", 0.3),
]


def labelled_run(qs, version, writer):
    """A finished run of `version` over four labelled states, with the answers above."""
    from questions.models import BatchItem, BatchRun

    run = BatchRun.objects.create(
        question_set=qs, version=version, backend="recorded", model="m", status="done"
    )
    for name, urgent, p, desk, chosen, confidence in LABELLED:
        state = services.sample_state_create(
            question_set=qs,
            name=name,
            state={"n": name},
            author=writer,
            expected={"urgent": urgent, "desk": desk},
        )
        probabilities = {k: 0.0 for k in ("billing", "tech", "other")}
        probabilities[chosen] = 1.0
        BatchItem.objects.create(
            run=run,
            sample_state=state.current_revision(),
            status="answered",
            answers={
                "urgent": {"type": "noul", "noul": p},
                "desk": {
                    "type": "choice",
                    "choice": chosen,
                    "probabilities": probabilities,
                    "confidence": confidence,
                },
            },
        )
    return run


def work(until, seconds: float = 15) -> None:
    """Run django-tasks' database worker (the real one, in batch mode) until `until()` holds."""
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, "the worker did not finish in time"
        Worker(
            queue_names=["default"],
            interval=0,
            batch=True,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id="test-worker",
            excluded_queue_names=[],
        ).run()
        time.sleep(0.02)


def finished() -> bool:
    return not WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).exists()
