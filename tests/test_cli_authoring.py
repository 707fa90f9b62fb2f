"""`questions import`, `states-import`, `submit` and `demo`."""

import json
from pathlib import Path

import pytest

from questions.core import check, spec
from questions.dev import standin
from questions.models import BatchRun, Decision, LabelMove, QuestionSet, SampleState, Version
from tests import factories
from tests.helpers import write
from tests.providers import run_cli as run

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]
EXAMPLES = Path(__file__).resolve().parent / "examples"


@pytest.fixture
def writer():
    return factories.author("writer")


@pytest.mark.parametrize("name", ["runtime-request.json", "typesafe-request.json"])
def test_import_a_request_body_creates_the_set_and_a_draft(writer, name):
    code, out, _ = run("import", str(EXAMPLES / name), "--set", "gestures", "--user", "writer")
    assert code == 0
    assert out.startswith("gestures version 1 (draft), sha256 ")
    version = Version.objects.get(question_set__slug="gestures")
    body = json.loads((EXAMPLES / name).read_text())
    assert version.document == body["questions"]
    assert version.author == writer


def test_import_an_export_document_keeps_its_hash(writer, tmp_path):
    questions = json.loads((EXAMPLES / "runtime-request.json").read_text())["questions"]
    export = {
        "format": spec.EXPORT_FORMAT,
        "question_set": "g",
        "version": 4,
        "status": "approved",
        "sha256": spec.questions_sha256(questions),
        "questions": questions,
    }
    code, out, _ = run(
        "import", write(tmp_path, export), "--set", "g2", "--user", "writer", "--json"
    )
    assert code == 0
    result = json.loads(out)
    assert result == {
        "set": "g2",
        "version": 1,
        "status": "draft",
        "sha256": spec.questions_sha256(questions),
    }


def test_invalid_import_changes_nothing(writer, tmp_path):
    code, out, err = run(
        "import",
        write(tmp_path, {"q": {"type": "score", "criteria": ["x"]}}),
        "--set",
        "new-set",
        "--user",
        "writer",
    )
    assert code == 1
    assert "score `q` has 1 level; at least 2 levels" in out
    assert "nothing was imported" in err
    assert not QuestionSet.objects.exists()


def test_import_while_a_draft_is_open_is_refused(writer, tmp_path):
    factories.question_set("busy", owner=writer)
    code, _, err = run(
        "import", write(tmp_path, factories.document(2)), "--set", "busy", "--user", "writer"
    )
    assert code == 1
    assert "already has an open draft, version 1" in err
    assert Version.objects.filter(question_set__slug="busy").count() == 1


def test_import_exit_2_for_unknown_users_and_unreadable_files(writer, tmp_path):
    assert (
        run("import", str(EXAMPLES / "runtime-request.json"), "--set", "s", "--user", "nobody")[0]
        == 2
    )
    assert run("import", str(tmp_path / "missing.json"), "--set", "s", "--user", "writer")[0] == 2


def test_states_import_array_and_jsonl(writer, tmp_path):
    qs = factories.question_set("s", owner=writer)
    items = [
        {"name": "a", "state": None},
        {"name": "b", "state": {"x": 1}, "expected": {"q0": "o0"}, "tags": ["t"]},
    ]
    code, out, _ = run("states-import", write(tmp_path, items), "--set", "s", "--user", "writer")
    assert (code, out.strip()) == (0, "s: 2 sample states imported")
    lines = "\n".join(json.dumps({"name": f"l{i}", "state": i}) for i in range(3))
    code, _, _ = run(
        "states-import", write(tmp_path, lines, "s.jsonl"), "--set", "s", "--user", "writer"
    )
    assert code == 0
    assert list(qs.sample_states.values_list("name", flat=True)) == ["a", "b", "l0", "l1", "l2"]
    assert SampleState.objects.get(name="a").state is None


def test_states_import_is_all_or_nothing(writer, tmp_path):
    factories.question_set("s", owner=writer)
    items = [{"name": "a", "state": 1}, {"name": "b"}]
    code, _, err = run("states-import", write(tmp_path, items), "--set", "s", "--user", "writer")
    assert code == 1
    assert "item 2" in err and "nothing was imported" in err
    assert not SampleState.objects.exists()
    assert run("states-import", write(tmp_path, items), "--set", "nope", "--user", "writer")[0] == 1
    assert (
        run("states-import", write(tmp_path, "{\n nope"), "--set", "s", "--user", "writer")[0] == 2
    )


def test_submit(writer):
    qs = factories.question_set("s", owner=writer)
    assert run("submit", "--set", "s", "--version", "1", "--user", "writer")[0] == 0
    assert factories.draft(qs) is None
    code, _, err = run("submit", "--set", "s", "--version", "1", "--user", "writer")
    assert code == 1 and "only a draft changes" in err
    assert run("submit", "--set", "s", "--version", "9", "--user", "writer")[0] == 1


@pytest.mark.django_db(transaction=True)
def test_demo_is_refused_without_debug_and_idempotent_with_force(settings):
    """The demo's runs ask a stand-in of its own, whatever provider is configured."""
    settings.TYPESAFE_API_KEY = ""
    settings.DEBUG = False
    code, _, err = run("demo")
    assert code == 1 and "Refused" in err
    code, out, _ = run("demo", "--force")
    assert code == 0
    assert "created user author (password demo)" in out
    assert set(QuestionSet.objects.values_list("slug", flat=True)) == {
        "gestures",
        "support-routing",
        "refund-triage",
        "shell-guard",
    }
    for version in Version.objects.all():
        assert check.validate(version.document, limits=spec.DEFAULT_LIMITS).valid, version
    gestures = QuestionSet.objects.get(slug="gestures")
    assert [v.status for v in gestures.versions.order_by("number")] == ["approved", "approved"]
    assert gestures.labels.get(name="production").version.number == 2
    assert gestures.labels.get(name="staging").version.number == 2
    moves = LabelMove.objects.filter(name="production", question_set=gestures).order_by("pk")
    assert [(m.from_version and m.from_version.number, m.to_version.number) for m in moves] == [
        (None, 1),
        (1, 2),
    ]
    runs = BatchRun.objects.filter(question_set=gestures).order_by("pk")
    assert [(r.version.number, r.status) for r in runs] == [(1, "done"), (2, "done")]
    # each version approved on its finished run: the approval's evidence and who answered it
    for version in Version.objects.filter(status="approved"):
        evidence = version.approved_evidence_run
        assert evidence is not None and evidence.version_id == version.pk
        assert evidence.status == "done" and version.approved_model_answered == standin.MODEL
        slug = version.question_set.slug
        assert f"approved {slug} v{version.number} on run {evidence.pk}" in out
    assert {i.status for r in runs for i in r.items.all()} == {"answered"}
    assert {d.model_answered for d in Decision.objects.filter(version__question_set=gestures)} == {
        standin.MODEL
    }
    # a set with enough labelled states that a control can judge every choice question
    refunds = QuestionSet.objects.get(slug="refund-triage")
    document = refunds.versions.get(number=1).document
    assert {q["type"] for q in document.values()} == {"choice", "score", "noul"}
    hand_made = refunds.sample_states.filter(source="manual")
    states = [s for s in hand_made if set(s.expected) == set(document)]
    assert len(states) >= 30
    assert len({s.expected["desk"] for s in states}) == len(document["desk"]["criteria"])
    unlabelled = hand_made.count() - len(states)
    assert unlabelled  # the labelling page has something to offer
    assert refunds.labels.get(name="production").version.number == 1
    refund_run = BatchRun.objects.get(question_set=refunds)
    assert (refund_run.status, refund_run.checked) == ("done", 3 * len(states))
    # and ten days of live traffic, some of it labelled (the production page's figures)
    sent = refunds.sample_states.filter(source="production")
    assert sent.count() > 40 and 0 < sent.exclude(expected={}).count() < sent.count()
    assert refund_run.items.count() == len(states) + unlabelled
    support = QuestionSet.objects.get(slug="support-routing")
    assert [v.status for v in support.versions.all()] == ["in_review"]
    # every demo state is one the provider's schema takes (none is null, a number or a boolean)
    assert all(isinstance(s.state, str | dict | list) for s in gestures.sample_states.all())
    code, out, _ = run("demo", "--force")
    assert (code, "the demo is loaded already" in out) == (0, True)
