"""Every journey scriptable: `questions label`, `request-changes`, `diff`, `compare` and
`token --revoke`, each exiting 0 (done), 1 (refused or failed, the reason printed; with --json
a JSON object with `status` and `detail`) or 2 (unusable arguments)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management.base import CommandError

from questions import services
from questions.models import APIToken, Label, LabelMove, Version
from questions.services import tokens
from tests.providers import run_cli, stand_in_serving

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved_two(world):
    """The world, with v2 approved too (production still on v1)."""
    v2 = Version.objects.get(question_set__slug="s", number=2)
    services.version_approve(confirm_weak_evidence=True, version=v2, reviewer=_user("checker"))
    return world


def _user(name):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=name)


def _production() -> int:
    return Label.objects.get(question_set__slug="s", name="production").version.number


# --- label ---------------------------------------------------------------------------------------


def test_label_moves_and_rolls_back_with_a_logged_note(approved_two):
    code, out, err = run_cli(
        "label",
        "--set",
        "s",
        "--label",
        "production",
        "--version",
        "2",
        "--user",
        "checker",
        "--note",
        "ship v2",
    )
    assert code == 0, err
    assert "production → version 2 (was version 1)" in out and _production() == 2
    code, out, _ = run_cli(
        "label",
        "--set",
        "s",
        "--label",
        "production",
        "--version",
        "1",
        "--user",
        "checker",
        "--json",
    )
    assert code == 0 and json.loads(out) == {
        "set": "s",
        "label": "production",
        "version": 1,
        "previous": 2,
    }
    assert _production() == 1
    moves = list(LabelMove.objects.filter(name="production").order_by("id"))
    assert [(m.from_version_id and m.from_version.number, m.to_version.number) for m in moves] == [
        (None, 1),
        (1, 2),
        (2, 1),
    ]
    assert moves[1].note == "ship v2"
    code, out, _ = run_cli(
        "label", "--set", "s", "--label", "staging", "--version", "2", "--user", "checker"
    )
    assert code == 0 and "(new label)" in out


@pytest.mark.parametrize(
    ("args", "code", "status", "words"),
    [
        (["--version", "3", "--user", "checker"], 1, 409, "approved versions only"),
        (["--version", "2", "--user", "writer"], 1, 403, "reviewers"),
        (["--version", "9", "--user", "checker"], 1, 404, "has no version 9"),
        (["--version", "1", "--user", "nobody"], 2, 400, "no user nobody"),
    ],
)
def test_label_refusals_change_nothing(world, args, code, status, words):
    got, out, _err = run_cli("label", "--set", "s", "--label", "production", *args, "--json")
    assert got == code
    printed = json.loads(out)
    assert printed["status"] == status and words in printed["detail"]
    assert _production() == 1


def test_label_with_a_bad_name_is_refused_plainly(approved_two):
    code, out, err = run_cli(
        "label", "--set", "s", "--label", "Prod!", "--version", "2", "--user", "checker"
    )
    assert code == 1 and "label name" in err and out == ""
    code, _, err = run_cli(
        "label", "--set", "nope", "--label", "x", "--version", "1", "--user", "checker"
    )
    assert code == 1 and "There is no set nope" in err


# --- request-changes ----------------------------------------------------------------------------


def test_request_changes_sends_a_submitted_version_back(world):
    code, _out, err = run_cli(
        "request-changes",
        "--set",
        "s",
        "--version",
        "2",
        "--user",
        "checker",
        "--note",
        "Say more",
    )
    assert code == 0, err
    v2 = Version.objects.get(question_set__slug="s", number=2)
    assert v2.status == "changes_requested"
    assert v2.events.filter(kind="changes_requested", note="Say more").exists()


@pytest.mark.parametrize(
    ("number", "user", "note", "status"),
    [("2", "checker", "  ", 422), ("1", "checker", "why", 409), ("2", "writer", "why", 403)],
)
def test_request_changes_refusals(world, number, user, note, status):
    code, out, _ = run_cli(
        "request-changes",
        "--set",
        "s",
        "--version",
        number,
        "--user",
        user,
        "--note",
        note,
        "--json",
    )
    assert code == 1 and json.loads(out)["status"] == status
    assert Version.objects.get(question_set__slug="s", number=2).status == "in_review"


# --- diff ---------------------------------------------------------------------------------------


def test_diff_names_what_changed_per_question(world):
    code, out, err = run_cli("diff", "--set", "s", "--from", "1", "--to", "2", "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert printed["from"] == 1 and printed["to"] == 2
    by_id = {q["id"]: q for q in printed["questions"]}
    assert by_id["q1"]["status"] == "added" and by_id["q0"]["status"] == "unchanged"
    assert printed["summary"] == {"unchanged": 1, "added": 1}
    code, out, _ = run_cli("diff", "--set", "s", "--from", "1", "--to", "2")
    assert code == 0 and "+ q1 (choice): added" in out and "1 added" in out


def test_diff_shows_the_words_before_and_after(world):
    v3 = Version.objects.get(question_set__slug="s", number=3)
    document = v3.document
    document["q0"]["instructions"] = "Which desk, really?"
    services.version_save(
        version=v3, document=document, base_revision=v3.revision, author=_user("writer")
    )
    _, out, _ = run_cli("diff", "--set", "s", "--from", "2", "--to", "3", "--json")
    change = json.loads(out)["questions"][0]["changes"][0]
    assert change["label"] == "instructions"
    assert change["before"] == "Question 0?" and change["after"] == "Which desk, really?"
    _code, out, _ = run_cli("diff", "--set", "s", "--from", "2", "--to", "3")
    assert "- Question 0?" in out and "+ Which desk, really?" in out


def test_diff_of_a_missing_version_is_a_404(world):
    code, out, _ = run_cli("diff", "--set", "s", "--from", "1", "--to", "7", "--json")
    assert code == 1 and json.loads(out)["status"] == 404


# --- compare ------------------------------------------------------------------------------------


@pytest.fixture
def stand_in(settings):
    with stand_in_serving(settings) as server:
        yield server


def test_compare_versions_through_a_backend_as_json_csv_and_text(world, stand_in):
    cols = ["--col", "v1:typesafe", "--col", "v2:typesafe", "--state", "n"]
    code, out, err = run_cli("compare", "--set", "s", *cols, "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert [c["key"] for c in printed["columns"]] == ["v1:typesafe", "v2:typesafe"]
    rows = {r["question"]: r for r in printed["rows"]}
    assert rows["q0"]["cells"][0]["answer"]["type"] == "choice"
    assert rows["q0"]["cells"][0]["answer"] == rows["q0"]["cells"][1]["answer"]
    assert rows["q1"]["cells"][0]["answer"] is None
    code, out, _ = run_cli("compare", "--set", "s", *cols, "--csv")
    table = list(csv.reader(io.StringIO(out)))
    assert table[0][:5] == ["state", "question", "type", "expected", "v1:typesafe answer"]
    assert len(table) == 3
    code, out, _ = run_cli("compare", "--set", "s", *cols)
    assert code == 0 and "[1] v1 · typesafe" in out and "n · q1: [1] not asked" in out
    # the same answers replayed at no cost
    code, out, _ = run_cli("compare", "--set", "s", "--col", "v1:recorded", "--json")
    assert code == 0 and json.loads(out)["rows"][0]["cells"][0]["answer"]["type"] == "choice"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--col", "v1:typesafe"], 1, "one state at a time"),
        (["--col", "v1:nosuch", "--state", "n"], 1, "Unknown backend"),
        (["--col", "run:999"], 1, "has no run 999"),
        (["--col", "v1:typesafe", "--state", "ghost"], 1, "no sample state 'ghost'"),
        (["--col", "version1"], 2, "Unknown column 'version1'"),
        (["--col", "v1:recorded", "--threshold", "1.5"], 2, "--threshold"),
    ],
)
def test_compare_refuses_what_it_cannot_show(world, stand_in, args, code, words):
    s = Version.objects.get(question_set__slug="s", number=1).question_set
    services.sample_state_create(question_set=s, name="m", state=2, author=_user("writer"))
    got, _out, err = run_cli("compare", "--set", "s", *args)
    assert got == code and words in err, err


# --- token --revoke -----------------------------------------------------------------------------


def test_token_revoke_revokes_every_active_token_of_the_name(world):
    code, raw, _ = run_cli("token", "--name", "runtime")
    code2, raw2, _ = run_cli("token", "--name", "runtime")
    assert code == code2 == 0
    assert tokens.api_token_authenticate(raw.strip()) is not None
    code, out, _err = run_cli("token", "--revoke", "runtime")
    assert code == 0 and "revoked 2 token(s) named runtime" in out
    assert tokens.api_token_authenticate(raw.strip()) is None
    assert tokens.api_token_authenticate(raw2.strip()) is None
    assert raw.strip() not in out  # only the prefixes are shown
    assert APIToken.objects.filter(revoked_at__isnull=True).count() == 0
    code, out, _ = run_cli("token", "--revoke", "runtime", "--json")
    assert code == 1 and json.loads(out)["status"] == 404


def test_token_needs_a_name_or_a_revoke_but_not_both():
    with pytest.raises(CommandError):
        run_cli("token")
    with pytest.raises(CommandError):
        run_cli("token", "--name", "a", "--revoke", "b")


@pytest.mark.django_db(transaction=True)  # the run's calls write from their own threads
def test_compare_prints_every_state_not_one_page(world, stand_in):
    from questions.selectors import comparison

    s = Version.objects.get(question_set__slug="s", number=1).question_set
    writer = _user("writer")
    services.sample_states_import(
        question_set=s,
        items=[{"name": f"extra {i:03}", "state": i} for i in range(comparison.PAGE_STATES + 5)],
        author=writer,
    )
    run = services.batch_create(
        version=Version.objects.get(question_set=s, number=1),
        backend="typesafe",
        user=writer,
        enqueue=False,
    )
    services.batch_execute(run.pk)
    code, out, err = run_cli("compare", "--set", "s", "--col", f"run:{run.pk}", "--json")
    assert code == 0, err
    states = {r["state"] for r in json.loads(out)["rows"]}
    assert len(states) == s.sample_states.count() > comparison.PAGE_STATES
