"""What several test modules share: the roles, every endpoint with the roles it allows, the
form data that gets past each endpoint's own checks, a world to run them in, and a signed-in
client per role; the editor's form fields as a browser would send them; files for the CLI; the
export's JSON Schema; hand-made answers and runs; and the task worker run until a condition."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve, reverse
from django.utils import timezone

from questions import exports, roles, services
from questions.core import attribution, check, ingest, spec
from questions.models import BatchItem, BatchRun, QuestionSet, Version
from questions.selectors.holdout import holdout_ids
from questions.services import attribution as attribution_services
from tests import factories
from tests.providers import SUGGEST_DOC, SUGGEST_QID, SUGGEST_SAYS

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"

ROLES = ("anonymous", "viewer", "author", "reviewer", "admin")
A, V, AU, R, AD = ROLES

# (name, method, path template, roles allowed, what an allowed role gets), the roles being those
# of the default team, which owns the world's sets. Everyone signed in reads; authors write;
# reviewers review, label and manage tokens; both ask live backends and comment; a team admin
# does all of it and manages the team's members; the API takes tokens only. Every route of the
# URL configuration has a row (tests/test_permissions.py checks it), so a new route enters the
# matrix and the form fuzzer together. With POST_DATA, every allowed cell succeeds: the status
# is the one a success answers (a redirect after a change, a page or fragment otherwise).
SIGNED_IN = {V, AU, R, AD}
EVERYONE = set(ROLES)
MATRIX = [
    ("sign-in page", "get", "/accounts/login/", EVERYONE, 200),
    ("sign out", "post", "/accounts/logout/", EVERYONE, 302),
    ("password page", "get", "/accounts/password_change/", SIGNED_IN, 200),
    ("password changed", "get", "/accounts/password_change/done/", SIGNED_IN, 200),
    # single sign-on: no identity provider is configured here, so there is none to start with
    # (tests/test_sso.py signs in through a real one)
    ("sso sign-in", "post", "/accounts/oidc/idp/login/", EVERYONE, 404),
    ("sso callback", "get", "/accounts/oidc/idp/login/callback/", EVERYONE, 404),
    ("health", "get", "/healthz", EVERYONE, 200),
    ("sets", "get", "/", SIGNED_IN, 200),
    ("check page", "get", "/check/", SIGNED_IN, 200),
    ("check", "post", "/check/", SIGNED_IN, 200),
    ("new set page", "get", "/sets/new/", {AU, AD}, 200),
    ("new set", "post", "/sets/new/", {AU, AD}, 302),
    ("set page", "get", "/sets/s/", SIGNED_IN, 200),
    ("history", "get", "/sets/s/history/", SIGNED_IN, 200),
    ("diff", "get", "/sets/s/diff/", SIGNED_IN, 200),
    ("editor", "get", "/sets/s/v3/", SIGNED_IN, 200),
    ("save", "post", "/sets/s/v3/save/", {AU, AD}, 302),
    ("validate", "post", "/sets/s/v3/validate/", SIGNED_IN, 200),
    ("card", "get", "/sets/s/v3/card/", {AU, AD}, 200),
    ("open card", "get", "/sets/s/v3/card/open/?card=k&id=q0", SIGNED_IN, 200),
    ("json view", "get", "/sets/s/v3/json/", SIGNED_IN, 200),
    ("json replace", "post", "/sets/s/v3/json/", {AU, AD}, 302),
    (
        "accept lint page",
        "get",
        "/sets/s/v3/lints/accept/?question=q0&code=numeric_representation",
        SIGNED_IN,
        200,
    ),
    ("accept lint", "post", "/sets/s/v3/lints/accept/", {AU}, 302),  # the set's authors only
    ("preview", "post", "/sets/s/v3/preview/", SIGNED_IN, 200),  # recordings are a read
    ("live preview", "post", "/sets/s/v3/preview/", {AU, R, AD}, 200),
    ("try plan", "post", "/sets/s/v3/try/plan/", {AU, R, AD}, 200),
    ("try", "post", "/sets/s/v3/try/", {AU, R, AD}, 200),
    ("try progress", "get", "/runs/{run}/try/", SIGNED_IN, 200),
    ("cancel try", "post", "/runs/{run}/try/cancel/", {AU, R, AD}, 200),
    ("attribution form", "get", "/sets/s/v1/attribution/?question=q0", SIGNED_IN, 200),
    ("attribution plan", "post", "/sets/s/v1/attribution/plan/", {AU, R, AD}, 200),
    ("attribution", "post", "/sets/s/v1/attribution/start/", {AU, R, AD}, 200),
    ("attribution progress", "get", "/runs/{attribution}/attribution/", SIGNED_IN, 200),
    ("cancel attribution", "post", "/runs/{attribution}/attribution/cancel/", {AU, R, AD}, 200),
    ("suggest form", "get", "/sets/sug/v1/suggest/?question=q0", SIGNED_IN, 200),
    ("suggest plan", "post", "/sets/sug/v1/suggest/plan/", {AU, R, AD}, 200),
    ("suggest", "post", "/sets/sug/v1/suggest/start/", {AU, R, AD}, 200),
    ("suggestion page", "get", "/suggestions/{suggestion}/", SIGNED_IN, 200),
    ("cancel suggestion", "post", "/suggestions/{suggestion}/cancel/", {AU, R, AD}, 200),
    ("use suggestion", "post", "/suggestions/{suggestion}/apply/", {AU, AD}, 302),
    ("submit", "post", "/sets/s/v3/submit/", {AU, AD}, 302),
    ("keep", "post", "/sets/s/v3/keep/", {AU, AD}, 302),
    ("discard", "post", "/sets/s/v3/discard/", {AU, AD}, 302),
    ("new draft", "post", "/sets/done/v1/new-draft/", {AU, AD}, 302),
    ("review page", "get", "/sets/s/v2/review/", SIGNED_IN, 200),
    ("approve", "post", "/sets/s/v2/review/", {R, AD}, 302),
    ("request changes", "post", "/sets/s/v2/review/", {R, AD}, 302),
    ("comment", "post", "/sets/s/v2/review/", {AU, R, AD}, 302),
    ("move label", "post", "/sets/s/labels/", {R, AD}, 302),
    ("label export", "get", "/sets/s/labels/production/export/", SIGNED_IN, 200),
    ("download export", "get", "/sets/s/v1/export.json", SIGNED_IN, 200),
    ("review queue", "get", "/reviews/", SIGNED_IN, 200),
    ("tokens", "get", "/tokens/", {R, AD}, 200),
    ("create token", "post", "/tokens/", {R, AD}, 200),
    ("new state page", "get", "/sets/s/states/new/", {AU, AD}, 200),
    ("new state", "post", "/sets/s/states/new/", {AU, AD}, 302),
    ("state page", "get", "/sets/s/states/{state}/", SIGNED_IN, 200),
    ("save state", "post", "/sets/s/states/{state}/", {AU, AD}, 302),
    ("state check", "post", "/sets/s/states/check/", SIGNED_IN, 200),
    ("duplicate state", "post", "/sets/s/states/{state}/duplicate/", {AU, AD}, 302),
    ("delete state", "post", "/sets/s/states/{spare}/delete/", {AU, AD}, 302),
    ("state history", "get", "/sets/s/states/{state}/history/", SIGNED_IN, 200),
    ("upload states", "post", "/sets/s/states/upload/", {AU, AD}, 302),
    ("states csv", "get", "/sets/s/states.csv", SIGNED_IN, 200),
    ("states jsonl", "get", "/sets/s/states.jsonl", SIGNED_IN, 200),
    ("label page", "get", "/sets/s/label/", SIGNED_IN, 200),
    ("agreement", "get", "/sets/s/agreement/", SIGNED_IN, 200),
    ("labelling settings", "post", "/sets/s/agreement/settings/", {R, AD}, 302),
    ("production", "get", "/sets/s/production/", SIGNED_IN, 200),
    ("ingest settings", "post", "/sets/s/production/settings/", {R, AD}, 302),
    ("save label", "post", "/sets/s/label/{state}/", {AU, AD}, 302),
    ("undo label", "post", "/sets/s/label/undo/", {AU, AD}, 302),
    ("hold state", "post", "/sets/s/label/{state}/hold/", {AU, AD}, 302),
    ("disputes page", "get", "/sets/s/disputes/", SIGNED_IN, 200),
    ("settle dispute", "post", "/sets/done/disputes/{dispute}/", {R, AD}, 302),
    ("start run", "post", "/sets/s/v1/runs/", {AU, R, AD}, 302),
    ("run page", "get", "/runs/{run}/", SIGNED_IN, 200),
    ("run records", "get", "/runs/{finished}/records.jevl", SIGNED_IN, 200),
    ("import records", "post", "/sets/s/records/", {AU, AD}, 302),
    ("cancel run", "post", "/runs/{run}/cancel/", {AU, R, AD}, 302),
    ("rerun failed", "post", "/runs/{finished}/rerun-failed/", {AU, R, AD}, 302),
    ("controls page", "get", "/sets/s/controls/", SIGNED_IN, 200),
    ("scorecard", "get", "/sets/s/scorecard/", SIGNED_IN, 200),
    ("start control", "post", "/sets/s/controls/start/", {AU, R, AD}, 302),
    ("start drift", "post", "/sets/s/drift/start/", {AU, R, AD}, 302),
    ("compare", "get", "/sets/s/compare/", SIGNED_IN, 200),
    ("advice page", "get", "/sets/s/v3/advice/", SIGNED_IN, 200),
    ("save advice", "post", "/sets/s/v3/advice/", {AU, AD}, 302),
    ("webhooks", "get", "/sets/s/webhooks/", {R, AD}, 200),
    ("add webhook", "post", "/sets/s/webhooks/", {R, AD}, 200),  # its secret, shown once
    ("test webhook", "post", "/sets/s/webhooks/{hook}/test/", {R, AD}, 302),
    ("delete webhook", "post", "/sets/s/webhooks/{hook}/delete/", {R, AD}, 302),
    ("schema", "get", "/schemas/question-set-1.json", EVERYONE, 200),
    ("teams", "get", "/teams/", SIGNED_IN, 200),
    ("team page", "get", "/teams/default/", SIGNED_IN, 200),
    ("member save", "post", "/teams/default/members/", {AD}, 302),
    ("audit page", "get", "/teams/default/audit/", {AD}, 200),
    ("audit csv", "get", "/teams/default/audit.csv", {AD}, 200),
    ("audit jsonl", "get", "/teams/default/audit.jsonl", {AD}, 200),
    ("api export", "get", "/api/sets/s/export.json?label=production", set(), 200),
    ("api states", "post", "/api/sets/s/states", set(), 202),
]

#: Routes outside the matrix, and why: the admin site's own permission checks (staff, the
#: model permissions) are Django's, tested in tests/test_admin.py.
OUTSIDE_THE_MATRIX = {"admin"}  # namespaces


def routes() -> dict[str, str]:
    """Every named route of the URL configuration (includes walked), name → its pattern, but
    those of the namespaces outside the matrix."""
    found: dict[str, str] = {}

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace not in OUTSIDE_THE_MATRIX:
                    walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                found[pattern.name or prefix + str(pattern.pattern)] = prefix + str(pattern.pattern)

    walk(get_resolver().url_patterns, "/")
    return found


def route_of(path: str) -> str:
    """The name of the route a matrix path reaches (its ids filled with any number)."""
    filled = path.split("?")[0].format_map(defaultdict(lambda: 1))
    return resolve(filled).url_name


#: What each POST row sends so that an allowed role's request succeeds.
POST_DATA = {
    "approve": {"action": "approve", "confirm_weak": "yes"},
    "request changes": {"action": "request_changes", "note": "more words"},
    "comment": {"action": "comment", "note": "seen"},
    "move label": {"name": "staging", "version": "1"},
    "labelling settings": {"needed": "2"},
    "ingest settings": {"keep_one_in": "1", "retention_days": "30", "daily_quota": "1000"},
    "new set": {"name": "Other", "slug": "other"},
    "create token": {"name": "runtime"},
    "new state": {"name": "n2", "state": "1", "base_revision": "0"},
    "save state": {"name": "n", "state": "2", "base_revision": "1"},
    "save": {
        "q": ["k"],
        "q-k-id": "x",
        "q-k-type": "noul",
        "q-k-instructions_mode": "text",
        "q-k-instructions": "Is it so?",
        "base_revision": "2",
    },
    "accept lint": {"question": "q0", "code": "numeric_representation", "reason": "a band"},
    "json replace": {
        "document": '{"x": {"type": "noul", "instructions": "?"}}',
        "base_revision": "2",
    },
    "preview": {
        "preview_backend": "recorded",
        "preview_state": "",
        "preview_state_json": '{"n": 1}',
    },
    "live preview": {
        "preview_backend": "typesafe",
        "preview_state": "",
        "preview_state_json": '{"n": 1}',
    },
    "try plan": {"try_backend": "typesafe", "try_against": "v1"},
    "try": {"try_backend": "typesafe", "try_against": "v1"},
    "attribution plan": {"state": "n", "question": "q0", "backend": "typesafe"},
    "attribution": {"state": "n", "question": "q0", "backend": "typesafe"},
    "suggest plan": {"question": "q0"},
    "suggest": {"question": "q0"},
    "use suggestion": {"candidate": "1"},
    "check": {"document": "{}"},
    "start run": {"backend": "recorded"},
    "start control": {"version": "1", "kind": "shuffle", "count": "2", "backend": "typesafe"},
    "start drift": {"label": "production", "model": "m-new"},
    "save advice": {"advice-0": "0.5"},
    "add webhook": {"url": "https://runtime.example/hooks", "description": "runtime"},
    "state check": {"state": "1"},
    # an empty file imports nothing, and says so (a file read again reads the same nothing)
    "import records": {"records": SimpleUploadedFile("records.jevl", b"")},
    "upload states": {
        "states": SimpleUploadedFile("states.csv", b'name,state\nuploaded,"{""n"": 2}"\n')
    },
    "save label": {"version": "1", "question": "q0", "answer": "o0"},
    "undo label": {"version": "1"},
    "settle dispute": {"question": "q0", "answer": "o0"},
    "member save": {"username": "viewer-user", "role": "author"},
}


def make_world() -> dict[str, int]:
    """A set with v1 approved under `production`, v2 in review and v3 an open draft."""
    writer = factories.author("writer")
    checker = factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=v1, reviewer=checker, label="production"
    )
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)
    services.version_draft_from(version=v2, author=writer)
    state = services.sample_state_create(question_set=qs, name="n", state={"n": 1}, author=writer)
    run = services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    hook, _ = services.webhook_create(
        question_set=qs, url="http://127.0.0.1:9/hooks", user=checker
    )  # nothing is sent: no worker runs in these tests
    return {"state": state.pk, "run": run.pk, "hook": hook.pk}


def make_matrix_world(users: dict[str, Any], *, live: bool = True) -> dict[str, int]:
    """`make_world`, and what makes every allowed cell of the matrix succeed: users per role, a
    set `done` with no open draft, a state no run asked (`spare`), a finished run on the live
    backend with a failed state (`finished`: a try's and a drift's baseline), a disputed state
    of `done` (`dispute`: two labels needed, its two labellers disagree), and a recorded
    answer for the draft's preview (when `live`: typesafe must be configured then)."""
    world = make_world()
    users.update({role: user_for(role) for role in ROLES if role != A})
    writer, checker = users[AU], users[R]
    done = factories.question_set("done", owner=writer)
    services.version_approve(
        version=services.version_submit(version=factories.draft(done), author=writer),
        reviewer=checker,
        confirm_weak_evidence=True,
    )
    # a state of `done` its two labellers (the writer and another author) label differently
    services.labelling_configure(question_set=done, user=checker, needed=2)
    dispute = services.sample_state_create(question_set=done, name="d", state=4, author=writer)
    for labeller, answer in ((writer, "o0"), (factories.author("second-labeller"), "o1")):
        services.state_label(sample=dispute, question_id="q0", answer=answer, labeller=labeller)
    qs = QuestionSet.objects.get(slug="s")
    v1, v3 = qs.versions.get(number=1), qs.versions.get(number=3)
    backend = "typesafe" if live else "recorded"
    run = services.batch_create(version=v1, backend=backend, user=writer, enqueue=False)
    BatchRun.objects.filter(pk=run.pk).update(
        status=BatchRun.Status.DONE, model="m-old", finished_at=timezone.now()
    )
    run.items.update(status=BatchItem.Status.FAILED)
    spare = services.sample_state_create(question_set=qs, name="spare", state=3, author=writer)
    edited = factories.document(1)
    # what a try asks again; its “1k” is the lint the matrix accepts
    edited["q0"]["instructions"] = "Which one is 1k, since v1?"
    services.version_save(version=v3, document=edited, base_revision=v3.revision, author=writer)
    sample = qs.sample_states.get(name="n")
    asked = check.validate(v1.document, limits=spec.Limits(), lints=False).document.questions
    attributing = attribution_services.attribution_start(
        plan=attribution_services.AttributionPlan(
            version=v1,
            sample=sample,
            backend=backend,
            model="m-old",
            live=live,
            plan=attribution.plan(
                asked, sample.state, question="q0", repeats=1, limits=spec.Limits()
            ),
        ),
        user=writer,
        enqueue=False,
    )
    suggestion = suggestion_world(writer, checker)
    if live:
        author = Client()
        author.force_login(writer)
        recorded = author.post("/sets/s/v3/preview/", POST_DATA["live preview"])
        assert recorded.status_code == 200, recorded.content[:300]
    return {
        **world,
        "spare": spare.pk,
        "finished": run.pk,
        "attribution": attributing.pk,
        "dispute": dispute.pk,
        "suggestion": suggestion.pk,
    }


#: the second team of the cross-team probes, and the roles its members hold there
OTHER_TEAM = "elsewhere"
OUTSIDERS = (V, AU, R, AD)


def make_other_team() -> dict[str, Any]:
    """A second team beside the matrix world's (whose sets, runs and tokens are the default
    team's): a set of its own with an approved version, a member per role (`<role>-elsewhere`),
    a read and an ingest token of its own; and a token of the default team named
    `default-runtime`, whose name no page of the other team may show."""
    team = factories.team(OTHER_TEAM)
    members = {
        role: factories.user(f"{role}-elsewhere", role=role, team=team) for role in OUTSIDERS
    }
    theirs = factories.question_set("theirs", owner=members[AU], team=team)
    services.version_approve(
        version=services.version_submit(version=factories.draft(theirs), author=members[AU]),
        reviewer=members[R],
        confirm_weak_evidence=True,
        label="production",
    )
    _, read = services.api_token_create(name="elsewhere-runtime", user=members[AD], team=team)
    _, ingest = services.api_token_create(
        name="elsewhere-ingest", user=members[AD], team=team, scope="ingest", sets=["theirs"]
    )
    services.api_token_create(name="default-runtime", user=factories.admin("default-admin"))
    return {"team": team, "members": members, "read": read, "ingest": ingest}


def suggestion_world(writer, checker):
    """A set `sug` (v1 approved, no open draft) whose last run missed `q0` on every labelled
    state — a training state to draft from and a held-out one to prove on, whatever ids the
    database hands out — and a finished suggestion for `q0` with one candidate to use."""
    from questions.core import holdout
    from questions.models import Suggestion

    qs = factories.question_set("sug", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(version=v1, reviewer=checker, confirm_weak_evidence=True)
    sides, i = set(), 0
    while len(sides) < 2:
        state = services.sample_state_create(
            question_set=qs, name=f"u{i}", state={"n": i}, author=writer, expected={"q0": "o0"}
        )
        sides.add(holdout.held_out(qs.pk, state.pk, qs.holdout_share))
        i += 1
    run = BatchRun.objects.create(
        question_set=qs, version=v1, backend="typesafe", model="m", status="done"
    )
    for state in qs.sample_states.all():
        BatchItem.objects.create(
            run=run,
            sample_state=state.current_revision(),
            status="answered",
            answers={
                "q0": {
                    "type": "choice",
                    "choice": "o1",
                    "probabilities": {"o0": 0.0, "o1": 1.0, "other": 0.0},
                    "confidence": 1.0,
                }
            },
        )
    services.run_summary_store(run)
    before = v1.document["q0"]
    after = {**before, "instructions": "Which one, as the state says?"}
    return Suggestion.objects.create(
        question_set=qs,
        version=v1,
        version_sha256=v1.sha256,
        question="q0",
        run=run,
        backend="typesafe",
        model="m",
        draft_model="chat-m",
        candidates_wanted=1,
        max_calls=10,
        status=Suggestion.Status.DONE,
        plan_text=json.dumps(
            {"before": before, "held_out": 1, "failing": ["u0"], "words": "a plan"}
        ),
        candidates_text=json.dumps(
            [
                {
                    "number": 1,
                    "status": "proven",
                    "verdict": "not proven",
                    "question": after,
                    "why": "asks plainly",
                    "reason": "",
                    "lints": [],
                    "proof": None,
                }
            ]
        ),
    )


def body(response) -> bytes:
    """A response's bytes, streamed or not."""
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def user_for(role: str):
    """A user of `role` (not anonymous), named after it."""
    return {
        V: lambda: factories.user(f"{role}-user"),
        AU: lambda: factories.author(f"{role}-user"),
        R: lambda: factories.reviewer(f"{role}-user"),
        AD: lambda: factories.admin(f"{role}-user"),
    }[role]()


def client_for(role: str) -> Client:
    client = Client()
    if role == A:
        return client
    client.force_login(user_for(role))
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


SCHEMA = json.loads(exports.EXPORT_SCHEMA_PATH.read_text())


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


def opened(client, version: Version, data: dict[str, list[str]], key: str) -> dict:
    """The posted page with one closed card opened, as the browser has it after a click."""
    qid = data[f"q-{key}-id"][0]
    response = client.get(editor_url(version, "version-card-open"), {"card": key, "id": qid})
    assert response.status_code == 200
    card = as_post(fields_of(response.content.decode()))
    assert f"q-{key}-stored" not in card and card[f"q-{key}-r"]
    assert card.pop("q") == [key]
    kept = {k: v for k, v in data.items() if not k.startswith(f"q-{key}-")}
    return kept | card


def paired_runs(qs, version, writer, outcomes, *, tags=None):
    """Two finished runs of `version` over one labelled state per entry of `outcomes` —
    (passed before, passed after) of the noul `urgent` (expected true: P(true) 0.9 passes,
    0.1 fails) — and the choice `desk` passing in both. `tags[i]`: the i-th state's tags."""
    from questions.models import BatchItem, BatchRun

    runs = [
        BatchRun.objects.create(
            question_set=qs,
            version=version,
            backend="recorded",
            model="m",
            status="done",
            finished_at=timezone.now(),
        )
        for _ in range(2)
    ]
    for i, pair in enumerate(outcomes):
        state = services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"n": i},
            author=writer,
            expected={"urgent": True, "desk": "billing"},
            tags=(tags[i] if tags else []),
        )
        for run, passed in zip(runs, pair, strict=True):
            BatchItem.objects.create(
                run=run,
                sample_state=state.current_revision(),
                status="answered",
                answers={
                    "urgent": {"type": "noul", "noul": 0.9 if passed else 0.1},
                    "desk": desk("billing", {"billing": 1.0}),
                },
            )
    for run in runs:
        services.run_summary_store(run)
    return runs


#: the scorecard tests' question map: a choice and a noul
CARD_DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "tech": "bugs", "other": "anything else"},
    },
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
}
CARD_STATES = 12
#: what one call of the scorecard world cost
CARD_CALL_COST = 0.00002


def _card_answers(chosen: str, p: float) -> dict:
    probabilities = {k: 0.0 for k in ("billing", "tech", "other")} | {chosen: 1.0}
    return {
        "desk": {
            "type": "choice",
            "choice": chosen,
            "probabilities": probabilities,
            "confidence": 1.0,
        },
        "urgent": {"type": "noul", "noul": p},
    }


def _card_run(qs, version, revisions, *, kind="run", count=0, answers_of, variants=1, live=None):
    """A finished run of `version` over `revisions`: per state and variant the answers
    `answers_of(i, variant)`, each call a live typesafe decision costing CARD_CALL_COST."""
    from questions.models import BatchItem, BatchRun, Decision

    run = BatchRun.objects.create(
        question_set=qs,
        version=version,
        backend="typesafe",
        model="m",
        status="done",
        kind=kind,
        control_count=count,
        finished_at=timezone.now(),
        live_questions=live,
    )
    checked = passed = 0
    for i, revision in enumerate(revisions):
        for variant in range(variants):
            decision = Decision.objects.create(
                backend="typesafe",
                model_asked="m",
                request_text="{}",
                request_sha256="r",
                state_sha256="s",
                questions_sha256="q",
                status=200,
                total_ms=1.0,
                cost=CARD_CALL_COST,
                usage={"input_tokens": 100},
            )
            answers = answers_of(i, variant)
            BatchItem.objects.create(
                run=run,
                sample_state=revision,
                status="answered",
                variant=variant,
                answers=answers,
                decision=decision,
            )
            if variant == 0:
                expected = revision.expected
                checked += 2
                passed += (answers["desk"]["choice"] == expected["desk"]) + (
                    (answers["urgent"]["noul"] >= 0.5) == expected["urgent"]
                )
    BatchRun.objects.filter(pk=run.pk).update(checked=checked, passed=passed, failed_states=0)
    run.refresh_from_db()
    return run


def scorecard_world() -> dict:
    """A set `card`: v1 kept, v2 (from v1) in review, v3 the open draft; twelve labelled
    states; a full run of each of v1 and v2 (v2 fixes `desk` on 7 states, `urgent` the same),
    a shuffle control of v2 that flags `desk` (the shuffled answers pass as often) and an
    order-sensitivity run of v2 whose `desk` flips on 3 states; a try of v1."""
    writer = factories.author("writer")
    factories.reviewer("checker")
    qs = factories.question_set("card", owner=writer, doc=CARD_DOC)
    v1 = qs.versions.get(number=1)
    draft2 = services.version_keep(version=v1, author=writer)
    v1.refresh_from_db()
    edited = json.loads(json.dumps(CARD_DOC))
    edited["desk"]["instructions"] = "Which desk handles it?"
    services.version_save(
        version=draft2, document=edited, base_revision=draft2.revision, author=writer
    )
    v2 = services.version_submit(version=draft2, author=writer)
    services.version_draft_from(version=v2, author=writer)
    desks = ["billing", "tech", "other"]
    revisions = []
    for i in range(CARD_STATES):
        state = services.sample_state_create(
            question_set=qs,
            name=f"state-{i:02d}",
            state={"i": i},
            author=writer,
            expected={"desk": desks[i % 3], "urgent": i % 2 == 0},
        )
        revisions.append(state.current_revision())

    def truth(i):
        return desks[i % 3], (0.9 if i % 2 == 0 else 0.1)

    def v1_answers(i, _variant):  # desk right on states 0-3 only; urgent wrong on 10, 11
        desk, p = truth(i)
        return _card_answers(
            desk if i < 4 else "other" if desk != "other" else "billing", 1 - p if i >= 10 else p
        )

    def v2_answers(i, _variant):  # desk right on 0-10; urgent the same as v1
        desk, p = truth(i)
        return _card_answers(desk if i < 11 else "billing", 1 - p if i >= 10 else p)

    def orders_answers(i, variant):  # desk flips on states 0-2 in the other order
        answer = v2_answers(i, 0)
        if variant and i < 3:
            answer = _card_answers(
                "other" if truth(i)[0] != "other" else "tech", answer["urgent"]["noul"]
            )
        return answer

    runs = {
        "v1": _card_run(qs, v1, revisions, answers_of=v1_answers),
        "try": _card_run(qs, v1, revisions, answers_of=v1_answers, live=["desk"]),
    }
    runs["v2"] = _card_run(qs, v2, revisions, answers_of=v2_answers)
    runs["shuffle"] = _card_run(
        qs, v2, revisions, kind="shuffle", count=1, variants=2, answers_of=v2_answers
    )
    runs["orders"] = _card_run(
        qs, v2, revisions, kind="orders", count=1, variants=2, answers_of=orders_answers
    )
    return {"set": qs, "v1": v1, "v2": v2, **{f"run_{k}": r for k, r in runs.items()}}


def race(n: int, work) -> list:
    """`work(i)` on `n` threads let go at once (a barrier), each on its own connection: what
    each returned, or the exception it raised."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        from django.db import connection as thread_connection

        try:
            barrier.wait()
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def wait_for(condition, timeout: float, what: str):
    """What `condition()` gives once it is truthy, polled until `timeout` seconds have passed;
    an AssertionError naming `what` after that."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"waited {timeout} s for {what}")


#: the walkthrough's returns assistant: a 5-option choice whose `late_delivery` carries a lint
#: at a long path (`questions.return_reason.criteria.late_delivery`), a 5-level score, a noul
RETURNS_DOC = {
    "return_reason": {
        "type": "choice",
        "instructions": "Why does the customer want to return this order?",
        "criteria": {
            "damaged": "the item arrived broken, cracked, dented, torn or not working",
            "wrong_item": "the customer received a different product, size or colour",
            "no_longer_needed": "the item is fine but the customer changed their mind",
            "late_delivery": "the parcel arrived after the promised date or has not arrived yet",
            "other": "none of the above, or no reason at all",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How soon must support answer?",
        "criteria": [
            "no hurry: an ordinary return",
            "routine: answer within a few days",
            "soon: the customer is waiting on it",
            "today: the customer is upset or the item is needed",
            "at once: safety, fraud or a legal threat",
        ],
    },
    "fraud_risk": {
        "type": "noul",
        "instructions": "Does this return request look like an attempt at return fraud?",
        "criteria": {
            "true": "asks for a refund without sending the item back, or the story changes",
            "false": "an ordinary return: the customer is willing to send the item back",
        },
    },
}

RETURNS_STATES = (
    ("blender-chargeback", "the blender arrived cracked and I want my money back", "damaged"),
    ("jacket-wrong", "you sent me a red jacket, I ordered a blue one", "wrong_item"),
    ("lamp-mind", "I changed my mind about the lamp", "no_longer_needed"),
    ("heater-late", "the heater still has not arrived after two weeks", "late_delivery"),
)


def returns_set(owner, slug: str = "returns"):
    """The returns assistant as a set of `owner`'s: v1 (its first draft, with the document)
    and four labelled sample states."""
    qs = factories.question_set(slug, owner=owner, doc=RETURNS_DOC)
    for name, message, reason in RETURNS_STATES:
        services.sample_state_create(
            question_set=qs,
            name=name,
            state={"message": message},
            author=owner,
            expected={"return_reason": reason, "urgency": 1, "fraud_risk": False},
        )
    return qs


#: the agreement tests' question map: a choice, a score and a noul
AGREEMENT_DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "anything else"},
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now"]},
    "churn": {"type": "noul", "instructions": "Will they leave?"},
}
AGREEMENT_DESKS = ("billing", "shipping", "other")


def agreement_world(states: int = 12) -> dict[str, Any]:
    """Set `eyes` needing two labels, labelled blind by ann and bob: they differ on the desk of
    every fourth state (s03, s07, s11, …), on the urgency of every fifth by one level, on the
    churn of every sixth; rev settles s03's desk and marks s07's ambiguous. A finished run of
    v1 answers every state, its desk wrong on every third."""
    from questions.services import labels

    ann, bob, rev = factories.author("ann"), factories.author("bob"), factories.reviewer("rev")
    qs = factories.question_set("eyes", owner=ann, doc=AGREEMENT_DOC)
    services.labelling_configure(question_set=qs, user=rev, needed=2)
    run = BatchRun.objects.create(
        question_set=qs, version=qs.versions.get(), backend="recorded", model="m", status="done"
    )
    samples = {}
    for i in range(states):
        sample = services.sample_state_create(
            question_set=qs, name=f"s{i:02d}", state={"n": i}, author=ann, expected={}
        )
        samples[sample.name] = sample
        desk, level, churn = AGREEMENT_DESKS[i % 3], i % 3, i % 2 == 0
        given = {
            ann: (desk, level, churn),
            bob: (
                AGREEMENT_DESKS[(i + 1) % 3] if i % 4 == 3 else desk,
                min(2, level + (i % 5 == 4)),
                churn != (i % 6 == 5),
            ),
        }
        for who, (d, u, c) in given.items():
            for qid, answer in (("desk", d), ("urgency", str(u)), ("churn", str(c).lower())):
                labels.state_label(sample=sample, question_id=qid, answer=answer, labeller=who)
        BatchItem.objects.create(
            run=run,
            sample_state=sample.current_revision(),
            status="answered",
            answers={
                "desk": {"type": "choice", "choice": "billing" if i % 3 == 2 else desk},
                "urgency": {"type": "score", "score": float(level)},
                "churn": {"type": "noul", "noul": 0.9 if churn else 0.1},
            },
        )
    labels.dispute_settle(
        sample=samples["s03"], question_id="desk", answer="shipping", reviewer=rev
    )
    labels.dispute_settle(sample=samples["s07"], question_id="desk", ambiguous=True, reviewer=rev)
    return {"set": qs, "run": run, "ann": ann, "bob": bob, "rev": rev, "samples": samples}


def live_desk(choice, billing=0.8, shipping=0.1, other=0.1, confidence=0.7):
    """A choice answer of the agreement document's desk, as production sends it."""
    return {
        "type": "choice",
        "choice": choice,
        "probabilities": {"billing": billing, "shipping": shipping, "other": other},
        "confidence": confidence,
    }


def live_world():
    """Set `live`: v1 of AGREEMENT_DOC approved under `production`, four labelled hand-made
    states, and production states v1 answered: two labelled (one passes), one unlabelled
    answered `other` (no labelled state expects it), one from another day."""
    owner, boss = factories.author("ann"), factories.reviewer("rev")
    qs = factories.question_set("live", owner=owner, doc=AGREEMENT_DOC)
    for i, chosen in enumerate(("billing", "billing", "shipping", "shipping")):
        services.sample_state_create(
            question_set=qs,
            name=f"hand{i}",
            state={"n": i},
            author=owner,
            expected={"desk": chosen, "urgency": 1, "churn": False},
        )
    version = services.version_submit(version=qs.versions.open_draft(), author=owner)
    services.version_approve(
        version=version, reviewer=boss, label="production", confirm_weak_evidence=True
    )
    now = timezone.now()
    rows = [
        ({"n": 10}, live_desk("billing"), now),
        ({"n": 11}, live_desk("shipping", 0.2, 0.7, 0.1), now),
        ({"n": 12}, live_desk("other", 0.34, 0.33, 0.33, confidence=0.34), now),
        ({"n": 13}, live_desk("billing"), now - timedelta(days=2)),
    ]
    _, raw = services.api_token_create(
        name="app", user=roles.OPERATOR, scope="ingest", sets=["live"]
    )
    body = "\n".join(
        json.dumps({"state": s, "answers": {"desk": a}, "version": 1, "at": at.isoformat()})
        for s, a, at in rows
    )
    counts = services.states_ingest(
        slug="live", body=body.encode(), media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    assert counts.kept == 4
    states = {s.state["n"]: s for s in qs.sample_states.filter(source="production")}
    for n, answer in ((10, "billing"), (11, "billing")):
        services.state_label(sample=states[n], question_id="desk", answer=answer, labeller=owner)
    return qs, version, owner, boss, raw


def add_suggest_state(qs, writer, i: int, desk: str) -> None:
    services.sample_state_create(
        question_set=qs,
        name=f"s{i:03d}",
        state={"n": i, "says": SUGGEST_SAYS[desk]},
        author=writer,
        expected={SUGGEST_QID: desk, "urgent": True},
    )


def suggestable_set(
    provider, *, held: int = 8, trained: int = 3, states: int = 60, slug: str = "desks"
):
    """A set of `providers.SUGGEST_DOC` whose states say billing's or tech's words, added
    until there are `states` and each desk has at least `held` labelled states on the held-out
    side and `trained` on the training side (whatever ids the database hands out), and v1
    approved on a finished run of them; the provider's record of requests starts again after
    the run."""
    writer = factories.author()
    qs = factories.question_set(slug, owner=writer, doc=SUGGEST_DOC)
    count = {desk: [0, 0] for desk in SUGGEST_SAYS}
    i = 0
    while i < states or any(h < held or t < trained for h, t in count.values()):
        desk = list(SUGGEST_SAYS)[i % 2]
        add_suggest_state(qs, writer, i, desk)
        state = qs.sample_states.get(name=f"s{i:03d}")
        count[desk][0 if state.pk in holdout_ids(qs) else 1] += 1
        i += 1
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    run = services.batch_create(version=v1, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk)
    reviewer = factories.reviewer()
    services.version_approve(version=v1, reviewer=reviewer, confirm_weak_evidence=True)
    provider.requests.clear()
    return qs, writer
