"""Sample states in bulk and labelled fast: the CSV/JSONL files (`questions.state_files`), the
import's duplicates and relabels, the set page's upload and download (a round trip changes
nothing), the ranking of the states worth labelling (`questions.labelling`), its CLI, and the
labelling page (a save through the state form's service, undo, skip)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse, reverse_lazy
from django.utils import timezone

from questions import services
from questions.core import controls, labelling, state_files
from questions.models import (
    BatchItem,
    BatchRun,
    LabelReservation,
    SampleState,
    SampleStateRevision,
    StateLabel,
)
from questions.selectors import labels
from tests import factories
from tests.helpers import body
from tests.providers import run_cli

pytestmark = pytest.mark.django_db

DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "else"},
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now"]},
    "churn": {"type": "noul", "instructions": "Will they leave?"},
}

CSV_TEXT = (
    "name,state,expected,tags\r\n"
    'refund late,"{""text"": ""where is my refund""}","{""desk"": ""billing""}","billing, late"\r\n'
    'two lines,"{\r\n  ""text"": ""pretty-printed""\r\n}",,\r\n'
    "plain null,null,,\r\n"
)


@pytest.fixture
def owner():
    return factories.author("owner")


@pytest.fixture
def qs(owner):
    return factories.question_set("tri", owner=owner, doc=DOC)


def _upload(client, slug, name, data: bytes):
    return client.post(
        reverse("states-upload", args=[slug]), {"states": SimpleUploadedFile(name, data)}
    )


# --- files ------------------------------------------------------------------------------------


def test_csv_is_read_with_json_cells_and_the_line_each_record_starts_on():
    rows = state_files.read(CSV_TEXT.encode(), filename="s.csv")
    assert [r.line for r in rows] == [2, 3, 6]
    assert rows[0].item == {
        "name": "refund late",
        "state": {"text": "where is my refund"},
        "expected": {"desk": "billing"},
        "tags": ["billing", "late"],
    }
    assert rows[1].item == {"name": "two lines", "state": {"text": "pretty-printed"}}
    assert rows[2].item == {"name": "plain null", "state": None}
    # a spreadsheet's byte-order mark and a JSON array of tags
    bom = b"\xef\xbb\xbfname,state,tags\n" + b'a,1,"[""x, y""]"\n'
    assert state_files.read(bom, filename="s.csv")[0].item == {
        "name": "a",
        "state": 1,
        "tags": ["x, y"],
    }


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name,state\na,{oops\n", "line 2: the state column is not JSON"),
        ("name,state\na,1\nb,\n", "line 3: the state column is empty (null is a state"),
        ("name,state\na,1,2\n", "line 2: 3 cells, but the header names 2 columns"),
        ("name,text\na,1\n", "line 1: no state column; unknown column"),
        ('name,state,expected\na,1,"[1]"\nb,2,{x\n', "line 3: the expected column is not JSON"),
    ],
)
def test_a_bad_csv_line_is_named(text, words):
    with pytest.raises(state_files.FileError) as refused:
        state_files.read(text.encode(), filename="s.csv")
    assert words in str(refused.value)


def test_jsonl_and_arrays_are_read_and_bad_lines_named():
    data = b'{"name": "a", "state": 1}\n\n{"name": "b", "state": null}\n'
    assert [(r.line, r.item["name"]) for r in state_files.read(data, filename="s.jsonl")] == [
        (1, "a"),
        (3, "b"),
    ]
    array = state_files.read(b'\n[{"name": "a", "state": 1}, {"name": "b"}]', filename="x")
    assert [r.where for r in array] == ["item 1", "item 2"]
    with pytest.raises(state_files.FileError, match="line 2: not JSON"):
        state_files.read(b'{"name": "a", "state": 1}\n{nope\n', filename="s.jsonl")
    with pytest.raises(state_files.FileError, match="save it as CSV"):
        state_files.read(b"PK\x03\x04 a zipped workbook", filename="labels.xlsx")
    with pytest.raises(state_files.FileError, match="line 2: not UTF-8"):
        state_files.read(b"name,state\n\xff,1\n", filename="s.csv")


def test_what_is_written_reads_back_the_same():
    records = [
        state_files.record("a, b", {"t": "x\ny", "n": [1, 2.5]}, {"desk": "billing"}, ["p", "q"]),
        state_files.record("n", None, {}, ["with, comma"]),
        state_files.record("=SUM(A1)", -1, {}, ["+x", "'-y"]),  # a spreadsheet's formulas
        state_files.record("'=kept", 0, {}, []),
    ]
    for write, name in ((state_files.csv_lines, "s.csv"), (state_files.jsonl_lines, "s.jsonl")):
        rows = state_files.read("".join(write(records)).encode(), filename=name)
        read = [{"expected": {}, "tags": [], **r.item} for r in rows]  # a blank cell is none
        assert read == records, name
    csv_text = "".join(state_files.csv_lines(records))
    assert "\r\n'=SUM(A1),-1,,\"'+x, ''-y\"\r\n" in csv_text  # never run as a formula


# --- the import service -----------------------------------------------------------------------


def test_duplicates_by_content_are_skipped_and_new_labels_update_with_history(qs, owner):
    items = [
        {"name": "a", "state": {"x": 1}, "expected": {"desk": "billing"}},
        {"name": "b", "state": {"x": 2}},
        {"name": "b again", "state": {"x": 2}},  # the same content as b, in the same file
    ]
    report = services.sample_states_import(question_set=qs, items=items, author=owner)
    assert [s.name for s in report.added] == ["a", "b"]
    assert report.duplicates == [("b again", "b")]
    again = services.sample_states_import(question_set=qs, items=items, author=owner)
    assert (again.added, again.relabelled) == ([], [])
    assert again.duplicates == [("a", "a"), ("b", "b"), ("b again", "b")]
    # a new label on an existing state (name and content the same): laid over, history kept
    labelled = services.sample_states_import(
        question_set=qs,
        items=[{"name": "a", "state": {"x": 1}, "expected": {"churn": True}, "tags": ["t"]}],
        author=owner,
    )
    a = SampleState.objects.get(name="a")
    assert [s.name for s in labelled.relabelled] == ["a"]
    assert a.expected == {"desk": "billing", "churn": True} and a.tags == ["t"]
    assert list(a.revisions.values_list("revision", "expected")) == [
        (2, {"desk": "billing", "churn": True}),
        (1, {"desk": "billing"}),
    ]
    assert SampleState.objects.count() == 2


def test_a_name_with_other_content_is_refused_naming_the_line_and_nothing_is_imported(qs, owner):
    services.sample_states_import(question_set=qs, items=[{"name": "a", "state": 1}], author=owner)
    items = [{"name": "new", "state": 5}, {"name": "a", "state": 2}]
    with pytest.raises(services.Conflict, match=r"line 7 \(a\): tri has a sample state called a"):
        services.sample_states_import(
            question_set=qs, items=items, author=owner, places=["line 3", "line 7"]
        )
    assert list(SampleState.objects.values_list("name", flat=True)) == ["a"]


def test_the_state_limit_holds_in_an_import(qs, owner, settings):
    settings.DECISIONS_LIMITS = type(settings.DECISIONS_LIMITS)(max_state_bytes=16)
    with pytest.raises(services.ServiceError, match="line 2"):
        services.sample_states_import(
            question_set=qs,
            items=[{"name": "big", "state": "x" * 100}],
            author=owner,
            places=["line 2"],
        )
    assert not SampleState.objects.exists()


@pytest.mark.parametrize(
    ("expected", "words"),
    [
        ({"desk": "nonsense"}, "desk in v1 takes billing, shipping, other, not 'nonsense'"),
        ({"urgency": 9}, "urgency in v1 takes 0, 1, 2, not 9"),
        ({"urgency": "2"}, "urgency in v1 takes 0, 1, 2, not '2'"),
        ({"churn": "yes"}, "churn in v1 takes true, false, not 'yes'"),
        ({"desk": True}, "desk in v1 takes billing, shipping, other, not true"),
    ],
)
def test_an_expected_answer_its_question_does_not_take_is_refused_by_line(
    qs, owner, expected, words
):
    items = [
        {"name": "fine", "state": 1, "expected": {"desk": "billing", "urgency": 2}},
        {"name": "bad", "state": 2, "expected": expected},
    ]
    with pytest.raises(services.Invalid) as refused:
        services.sample_states_import(
            question_set=qs, items=items, author=owner, places=["line 2", "line 3"]
        )
    assert str(refused.value) == f"line 3 (bad): {words}"
    assert not SampleState.objects.exists()  # all or nothing


def test_the_import_checks_the_labelled_for_version_and_refuses_an_unknown_question(qs, owner):
    v1 = factories.draft(qs)
    v2 = services.version_keep(version=v1, author=owner)  # v2: a draft with the same document
    doc = {k: v for k, v in DOC.items() if k != "churn"}
    doc["desk"] = {**DOC["desk"], "criteria": {"billing": "money", "fraud": "theft"}}
    services.version_save(version=v2, document=doc, base_revision=v2.revision, author=owner)
    with pytest.raises(services.Invalid, match=r"desk in v2 takes billing, fraud, not 'shipping'"):
        services.sample_states_import(
            question_set=qs,
            items=[{"name": "a", "state": 1, "expected": {"desk": "shipping"}}],
            author=owner,
        )
    with pytest.raises(services.Invalid) as refused:
        services.sample_states_import(
            question_set=qs,
            items=[{"name": "a", "state": 1, "expected": {"nope": "x"}}],
            author=owner,
        )
    assert "no version of tri has a question `nope`" in str(refused.value)
    # churn is v1's only: checked against v1, the newest version that has it
    with pytest.raises(services.Invalid, match=r"churn in v1 takes true, false, not 'x'"):
        services.sample_states_import(
            question_set=qs,
            items=[{"name": "a", "state": 1, "expected": {"churn": "x"}}],
            author=owner,
        )
    assert not SampleState.objects.exists()
    report = services.sample_states_import(
        question_set=qs,
        items=[{"name": "a", "state": 1, "expected": {"desk": "fraud", "churn": False}}],
        author=owner,
    )
    assert report.added[0].expected == {"desk": "fraud", "churn": False}


def test_the_cli_import_refuses_an_answer_the_question_does_not_take(qs, owner, tmp_path):
    path = tmp_path / "states.jsonl"
    path.write_text(
        '{"name": "ok", "state": 1}\n'
        '{"name": "x", "state": 2, "expected": {"desk": "nonsense", "urgency": 9}}\n'
    )
    code, out, err = run_cli("states-import", str(path), "--set", "tri", "--user", "owner")
    assert code == 1 and out == ""
    assert "item 2 (x): desk in v1 takes billing, shipping, other, not 'nonsense'" in err
    assert "nothing was imported" in err
    assert not SampleState.objects.exists()


def test_an_import_of_no_records_is_refused(qs, owner):
    with pytest.raises(services.Invalid, match="the file holds no records"):
        services.sample_states_import(question_set=qs, items=[], author=owner)


# --- the set page's upload and download -------------------------------------------------------


def test_a_refused_upload_links_back_to_its_set(client, qs, owner):
    client.force_login(owner)
    bad = 'name,state,expected\r\nx,1,"{""desk"": ""nonsense"", ""urgency"": 9}"\r\n'
    response = _upload(client, "tri", "states.csv", bad.encode())
    text = response.content.decode()
    assert response.status_code == 422
    assert "line 2 (x): desk in v1 takes billing, shipping, other, not &#x27;nonsense&#x27;" in text
    assert f'href="{qs.get_absolute_url()}">Back to tri</a>' in text
    for empty in (b"", b"name,state,expected,tags\r\n", b"\n\n"):
        name = "s.jsonl" if empty == b"\n\n" else "s.csv"
        response = _upload(client, "tri", name, empty)
        text = response.content.decode()
        assert response.status_code == 422, empty
        assert "the file holds no records" in text and "Nothing was imported" in text
    assert not SampleState.objects.exists()


def test_the_upload_imports_a_csv_and_says_what_it_added_and_skipped(client, qs, owner):
    client.force_login(owner)
    page = client.get(qs.get_absolute_url()).content.decode()
    assert reverse("states-upload", args=["tri"]) in page and 'name="states"' in page
    response = _upload(client, "tri", "states.csv", CSV_TEXT.encode())
    assert response.status_code == 302
    page = client.get(response.url).content.decode()
    assert "Added 3 sample states." in page
    response = _upload(client, "tri", "states.csv", CSV_TEXT.encode())
    page = client.get(response.url).content.decode()
    assert "Added 0 sample states; skipped 3 as duplicates by content" in page
    assert SampleState.objects.count() == 3


def test_a_bad_row_is_refused_naming_its_line_and_nothing_is_imported(client, qs, owner):
    client.force_login(owner)
    bad = CSV_TEXT + 'broken,"{""a"": 1, ""a"": 2}",,\r\n'
    response = _upload(client, "tri", "states.csv", bad.encode())
    assert response.status_code == 422
    text = response.content.decode()
    assert "line 7 (broken)" in text and "key `a` is repeated" in text
    assert "Nothing was imported" in text
    response = _upload(client, "tri", "s.jsonl", b'{"name": "x", "state": 1}\n{"name": 2}\n')
    assert response.status_code == 422 and "line 2: needs an object with name and state" in (
        response.content.decode()
    )
    response = client.post(reverse("states-upload", args=["tri"]), {})
    assert response.status_code == 422 and "Choose a CSV or JSONL file" in response.content.decode()
    assert not SampleState.objects.exists()


def test_above_the_upload_limit_is_the_413_page(client, qs, owner, settings):
    client.force_login(owner)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 70_000
    big = b"name,state\n" + b"".join(b'n%d,"%s"\n' % (i, b"1" * 90) for i in range(1000))
    response = _upload(client, "tri", "big.csv", big)
    assert response.status_code == 413
    assert not SampleState.objects.exists()


def test_only_authors_upload(client, qs):
    client.force_login(factories.user("reader"))
    assert _upload(client, "tri", "s.csv", CSV_TEXT.encode()).status_code == 403
    page = client.get(qs.get_absolute_url()).content.decode()
    assert reverse("states-upload", args=["tri"]) not in page
    assert not SampleState.objects.exists()


@pytest.mark.parametrize(("route", "name"), [("states-csv", "s.csv"), ("states-jsonl", "s.jsonl")])
def test_export_then_import_changes_nothing_and_new_labels_come_back(
    client, qs, owner, route, name
):
    client.force_login(owner)
    _upload(client, "tri", "states.csv", CSV_TEXT.encode())
    before = list(SampleState.objects.values_list("name", "state_text", "expected", "tags"))
    revisions = SampleStateRevision.objects.count()
    response = client.get(reverse(route, args=["tri"]))
    assert response.status_code == 200 and response.streaming
    assert f"tri-states.{name.split('.')[1]}" in response["Content-Disposition"]
    exported = body(response)
    response = _upload(client, "tri", name, exported)
    page = client.get(response.url).content.decode()
    assert "Added 0 sample states; skipped 3 as duplicates by content" in page
    assert list(SampleState.objects.values_list("name", "state_text", "expected", "tags")) == before
    assert SampleStateRevision.objects.count() == revisions
    # labelled in a spreadsheet: the new expected answers are applied, a revision each
    rows = state_files.read(exported, filename=name)
    for row in rows:
        row.item.setdefault("expected", {})["churn"] = row.item["name"] == "plain null"
    relabelled = "".join(state_files.jsonl_lines(r.item for r in rows)).encode()
    response = _upload(client, "tri", "labelled.jsonl", relabelled)
    page = client.get(response.url).content.decode()
    assert "new expected answers on 3" in page
    assert SampleState.objects.get(name="refund late").expected == {
        "desk": "billing",
        "churn": False,
    }
    assert SampleStateRevision.objects.count() == revisions + 3


# --- the ranking ------------------------------------------------------------------------------


def _choice(chosen, confidence=0.9):
    return {"type": "choice", "choice": chosen, "probabilities": {}, "confidence": confidence}


def test_disagreement_ranks_first_then_low_confidence_then_the_controls_need():
    questions = labelling.questions_of(DOC)
    assert [q.id for q in questions] == ["desk", "urgency", "churn"]
    states = [
        ("calm", {"urgency": 0, "churn": False}),
        ("split", {"urgency": 0, "churn": False}),
        ("unsure", {"urgency": 0, "churn": False}),
        ("done", {"desk": "other", "urgency": 1, "churn": True}),
    ]
    readings = {
        "split": [
            labelling.Reading("v2 typesafe", "desk", _choice("billing")),
            labelling.Reading("v1 typesafe", "desk", _choice("shipping")),
        ],
        "unsure": [labelling.Reading("v2 typesafe", "desk", _choice("billing", 0.41))],
        "calm": [labelling.Reading("v2 typesafe", "desk", _choice("other"))],
    }
    ranked = labelling.rank(questions, states, readings)
    assert [c.name for c in ranked] == ["split", "unsure", "calm"]
    assert ranked[0].as_json() == {
        "name": "split",
        "reason": "`desk`: the answers disagree (v2 typesafe: billing vs v1 typesafe: shipping)",
        "questions": ["desk"],
    }
    assert ranked[1].reason == "`desk` answered with confidence 0.41"
    more = controls.FEW_ANSWERS - 1
    assert ranked[2].reason == f"{more} more labels on `desk` and the shuffle control can judge it"
    assert labelling.rank(questions, states, readings, limit=1)[0].name == "split"


def test_a_noul_near_the_threshold_is_unsure_and_a_labelled_state_is_no_candidate():
    questions = labelling.questions_of({"churn": DOC["churn"]})
    states = [("near", {}), ("far", {}), ("done", {"churn": True})]
    readings = {
        "near": [labelling.Reading("v1 typesafe", "churn", {"type": "noul", "noul": 0.55})],
        "far": [labelling.Reading("v1 typesafe", "churn", {"type": "noul", "noul": 0.97})],
    }
    ranked = labelling.rank(questions, states, readings)
    assert [(c.name, c.reason) for c in ranked] == [
        ("near", "`churn` answered with P(true) 0.55, near the threshold"),
        ("far", "`churn` has no expected answer"),
    ]


def test_unlocks_say_how_many_labels_a_control_needs():
    desk = labelling.questions_of(DOC)[0]
    assert (
        labelling.unlock(desk, 2) == "8 more labels on `desk` and the shuffle control can judge it"
    )
    assert labelling.unlock(desk, controls.FEW_ANSWERS) == ""
    assert labelling.unlocked(desk, controls.FEW_ANSWERS).startswith("The shuffle control can")
    assert labelling.unlocked(desk, controls.FEW_ANSWERS + 1) == ""


# --- the CLI ---------------------------------------------------------------------------------


def _recorded_run(qs, version, answers_by_state, backend="recorded"):
    run = BatchRun.objects.create(
        question_set=qs, version=version, backend=backend, model="m", status="done"
    )
    for state, answers in answers_by_state.items():
        BatchItem.objects.create(
            run=run, sample_state=state.current_revision(), status="answered", answers=answers
        )
    return run


def test_states_to_label_from_recorded_answers_as_json_and_text(qs, owner):
    version = factories.draft(qs)
    a = services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    b = services.sample_state_create(question_set=qs, name="b", state={"n": 2}, author=owner)
    services.sample_state_create(
        question_set=qs,
        name="c",
        state={"n": 3},
        author=owner,
        expected={"desk": "other", "urgency": 0, "churn": False},
    )
    _recorded_run(qs, version, {a: {"desk": _choice("billing")}, b: {"desk": _choice("other")}})
    _recorded_run(
        qs, version, {a: {"desk": _choice("shipping")}, b: {"desk": _choice("other")}}, "typesafe"
    )
    code, out, err = run_cli("states-to-label", "--set", "tri", "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert list(listed) == ["states"]
    assert [s["name"] for s in listed["states"]] == ["a", "b"]
    assert set(listed["states"][0]) == {"name", "reason", "questions"}
    assert listed["states"][0]["questions"][0] == "desk"
    assert "disagree" in listed["states"][0]["reason"]
    code, out, _ = run_cli("states-to-label", "--set", "tri", "--limit", "1")
    assert code == 0 and out.startswith("a\tdesk, ") and "\nb\t" not in out
    assert run_cli("states-to-label", "--set", "nope")[0] == 1
    assert run_cli("states-to-label", "--set", "tri", "--version", "9", "--json")[0] == 1
    assert run_cli("states-to-label", "--set", "tri", "--limit", "0")[0] == 2


def test_states_export_writes_what_states_import_reads(qs, owner, tmp_path):
    services.sample_state_create(
        question_set=qs, name="a", state={"n": 1}, author=owner, expected={"desk": "billing"}
    )
    code, out, err = run_cli("states-export", "--set", "tri", "--format", "csv")
    assert code == 0 and out.startswith("name,state,expected,tags")
    assert "wrote 1 sample states of tri" in err
    path = tmp_path / "s.jsonl"
    assert run_cli("states-export", "--set", "tri", "--format", "jsonl", "-o", str(path))[0] == 0
    code, out, _ = run_cli("states-import", str(path), "--set", "tri", "--user", "owner")
    assert (code, out.strip()) == (
        0,
        "tri: 0 sample states imported, 1 skipped as duplicates by content",
    )


# --- the labelling page -----------------------------------------------------------------------


@pytest.fixture
def labelling_world(client, qs, owner):
    client.force_login(owner)
    version = factories.draft(qs)
    a = services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    services.sample_state_create(question_set=qs, name="b", state={"n": 2}, author=owner)
    _recorded_run(qs, version, {a: {"desk": _choice("shipping", 0.4)}})
    return version, a


PAGE = reverse_lazy("label-states", args=["tri"])
HTMX = {"HX-Request": "true", "HX-Target": "labelling"}


def _save(client, sample, answer, *, question="desk", headers=None):
    return client.post(
        reverse("label-save", args=["tri", sample.pk]),
        {"version": "1", "question": question, "answer": answer},
        headers=headers or {},
    )


def _undo(client, **headers):
    return client.post(reverse("label-undo", args=["tri"]), {"version": "1"}, headers=headers)


def _shown(page: str) -> tuple[str, str]:
    """The state and the question the labelling part shows."""
    state = re.search(r'id="label-heading">.*?</span> (?:<a [^>]*>)?([^<]+)<', page).group(1)
    return state, re.search(r'id="question-heading">.*?<code>([^<]+)</code>', page).group(1)


def test_the_page_shows_the_most_telling_state_with_a_suggestion_not_a_choice(
    client, labelling_world
):
    _, a = labelling_world
    page = client.get(PAGE).content.decode()
    assert _shown(page) == ("a", "desk") and f"/states/{a.pk}/" in page
    assert "v1 recorded: <strong>shipping</strong>" in page  # the suggestion, in words
    assert 'class="secondary outline suggested"' in page  # marked, never chosen
    assert "checked" not in page
    assert 'data-keys="1"' in page and 'data-keys="s"' in page
    assert '<kbd>1</kbd> <strong>billing</strong> <span class="detail">money</span>' in page
    assert "10 more labels on <code>desk</code> and the shuffle control can judge it" in page
    assert f'data-url="/sets/tri/label/?version=1&amp;state={a.pk}&amp;question=desk"' in page
    assert SampleState.objects.get(pk=a.pk).revision == 1  # a GET writes nothing


def test_each_key_is_the_number_shown_a_score_s_its_level_a_noul_s_1_2_or_t_f(qs, owner):
    levels = ["no hurry at all", "routine", "soon", "today", "now", "complaint threatens to leave"]
    doc = {**DOC, "urgency": {"type": "score", "criteria": levels}}
    question = {q.id: q for q in labelling.questions_of(doc)}
    assert question["urgency"].keys() == [(str(n),) for n in range(6)]
    assert question["desk"].keys() == [("1",), ("2",), ("3",)]
    assert question["churn"].keys() == [("1", "t"), ("2", "f")]
    assert question["urgency"].said(5) == "urgency: 5 — complaint threatens to leave"
    assert question["desk"].said("billing") == "desk: billing — money"
    assert question["churn"].said(False) == "churn: false"
    eleven = {"type": "choice", "criteria": {f"o{i}": "" for i in range(11)}}
    assert labelling.questions_of({"many": eleven})[0].keys()[8:] == [("9",), (), ()]


def test_a_score_s_buttons_show_the_level_number_and_its_whole_description(client, owner):
    long = ("the customer says they will leave unless it is solved by tomorrow " * 2).strip()
    doc = {**DOC, "urgency": {"type": "score", "criteria": ["calm", "soon", long]}}
    client.force_login(owner)
    lv = factories.question_set("lv", owner=owner, doc=doc)
    a = services.sample_state_create(
        question_set=lv, name="a", state={"n": 1}, author=owner, expected={"desk": "other"}
    )
    page = client.get(reverse("label-states", args=["lv"]), {"state": a.pk, "question": "urgency"})
    page = page.content.decode()
    assert _shown(page) == ("a", "urgency")
    assert '<kbd>0</kbd> <span class="detail">calm</span>' in page
    assert f'aria-keyshortcuts="2"><kbd>2</kbd> <span class="detail">{long}</span>' in page
    saved = client.post(
        reverse("label-save", args=["lv", a.pk]), {"question": "urgency", "answer": "2"}
    )
    assert saved.status_code == 302
    assert SampleState.objects.get(pk=a.pk).expected == {"desk": "other", "urgency": 2}


def test_a_label_saves_as_this_labeller_s_and_the_page_stays_on_the_state(
    client, labelling_world, owner
):
    _, a = labelling_world
    response = _save(client, a, "billing")
    assert response.status_code == 302
    assert response.url == f"/sets/tri/label/?version=1&state={a.pk}&question=urgency"
    a.refresh_from_db()
    assert a.expected == {"desk": "billing"} and a.revision == 2
    assert list(StateLabel.objects.values_list("labeller__username", "answer")) == [
        ("owner", "billing")
    ]
    page = client.get(response.url).content.decode()
    assert "Saved for a: desk: billing — money. 9 more labels on <code>desk</code>" in page
    assert _shown(page) == ("a", "urgency")  # the same state's next question
    again = client.get(response.url).content.decode()  # a reload: the same state and question
    assert _shown(again) == ("a", "urgency")


def test_from_htmx_a_label_swaps_the_labelling_part_and_echoes_the_answer_in_words(
    client, labelling_world
):
    _, a = labelling_world
    response = _save(client, a, "2", question="urgency", headers=HTMX)
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" not in page and page.lstrip().startswith('<section id="labelling"')
    assert 'id="label-echo"' in page and 'hx-swap-oob="innerHTML"' in page
    assert "Saved for a: urgency: 2 — now." in page
    assert _shown(page) == ("a", "desk")  # the state's other questions come first
    assert f"state={a.pk}&amp;question=desk" in page  # the address the page takes
    assert SampleState.objects.get(pk=a.pk).expected == {"urgency": 2}


def test_the_state_in_the_address_stays_however_the_ranking_moves(client, labelling_world, owner):
    b = SampleState.objects.get(name="b")
    first = client.get(PAGE).content.decode()
    assert _shown(first) == _shown(client.get(PAGE).content.decode()) == ("a", "desk")
    page = client.get(PAGE, {"state": b.pk, "question": "churn"}).content.decode()
    assert _shown(page) == ("b", "churn")
    page = client.get(PAGE, {"state": b.pk, "question": "gone"}).content.decode()
    assert _shown(page)[0] == "b"  # a question the state no longer lacks: its first open one
    services.sample_state_update(
        sample=b,
        name="b",
        state={"n": 2},
        author=owner,
        base_revision=1,
        expected={"desk": "other", "urgency": 0, "churn": True},
    )
    page = client.get(PAGE, {"state": b.pk}).content.decode()
    assert _shown(page)[0] == "a"  # b is labelled: the next state


def test_undo_takes_back_the_labellers_last_label_after_a_reload(client, labelling_world):
    _, a = labelling_world
    _save(client, a, "billing")
    _save(client, a, "2", question="urgency")
    page = client.get(PAGE).content.decode()  # a fresh page: no address of the last save
    assert 'data-keys="u"' in page and "Undo urgency: 2 — now <small>on a</small>" in page
    undo = _undo(client)
    assert undo.status_code == 302
    assert undo.url == f"/sets/tri/label/?version=1&state={a.pk}&question=urgency"
    a.refresh_from_db()
    assert a.expected == {"desk": "billing"} and a.revision == 4
    page = client.get(undo.url).content.decode()
    assert "Undone for a: urgency: 2 — now." in page and _shown(page) == ("a", "urgency")
    assert "Undo desk: billing — money" in page  # the next undo, further back
    swapped = _undo(client, **HTMX).content.decode()
    assert "Undone for a: desk: billing — money." in swapped and _shown(swapped) == ("a", "desk")
    assert 'data-keys="u"' not in swapped
    assert "Nothing to undo" in _undo(client, **HTMX).content.decode()
    a.refresh_from_db()
    assert a.expected == {} and [r.expected for r in a.revisions.all()][:2] == [
        {},
        {"desk": "billing"},
    ]


def test_a_noul_takes_true_or_false_and_a_wrong_answer_is_refused(client, labelling_world):
    _, a = labelling_world
    page = client.get(PAGE, {"state": a.pk, "question": "churn"}).content.decode()
    assert 'value="true" class="secondary outline" data-keys="1 t"' in page
    assert 'value="false" class="secondary outline" data-keys="2 f"' in page
    assert _save(client, a, "true", question="churn").status_code == 302
    a.refresh_from_db()
    assert a.expected == {"churn": True}
    refused = _save(client, a, "maybe", question="churn")
    assert refused.status_code == 422
    assert "churn in v1 takes true, false, not &#x27;maybe&#x27;" in refused.content.decode()
    assert _save(client, a, "x", question="nope").status_code == 422
    a.refresh_from_db()
    assert a.expected == {"churn": True}


def test_skip_moves_on_and_a_reader_sees_no_buttons(client, labelling_world):
    _, a = labelling_world
    b = SampleState.objects.get(name="b")
    page = client.get(PAGE, {"skipped": str(a.pk)}).content.decode()
    assert (
        _shown(page)[0] == "b"
        and f'hx-get="/sets/tri/label/?version=1&amp;skipped={a.pk}%2C{b.pk}"' in page
    )
    swapped = client.get(PAGE, {"skipped": str(a.pk)}, headers=HTMX).content.decode()
    assert swapped.lstrip().startswith('<section id="labelling"') and _shown(swapped)[0] == "b"
    page = client.get(PAGE, {"skipped": f"{a.pk},{b.pk}"})
    assert "Start again from the top" in page.content.decode()
    client.force_login(factories.user("reader"))
    page = client.get(PAGE).content.decode()
    assert 'data-keys="1"' not in page and 'data-keys="u"' not in page
    assert _save(client, a, "billing").status_code == 403
    assert _undo(client).status_code == 403
    assert not StateLabel.objects.exists()


# --- blind labelling: two or more labels needed ------------------------------------------------


@pytest.fixture
def blind(client, qs, owner):
    """tri needing two labels a question: states a (a recorded answer, unsure) and b, and
    three labellers."""
    version = factories.draft(qs)
    services.labelling_configure(question_set=qs, user=factories.reviewer("rev"), needed=2)
    a = services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    b = services.sample_state_create(question_set=qs, name="b", state={"n": 2}, author=owner)
    _recorded_run(qs, version, {a: {"desk": _choice("shipping", 0.4)}})
    people = {name: factories.author(name) for name in ("ann", "bob", "cat")}
    return {"version": version, "a": a, "b": b, **people}


def _as(client, user):
    client.force_login(user)
    return client


def test_blind_a_labeller_sees_neither_the_model_s_answer_nor_the_others_labels(client, blind):
    a = blind["a"]
    services.state_label(sample=a, question_id="desk", answer="other", labeller=blind["bob"])
    page = _as(client, blind["ann"]).get(PAGE).content.decode()
    assert _shown(page) == ("a", "desk")
    assert "Blind: 2 labels a question" in page
    assert "v1 recorded" not in page and "confidence 0.40" not in page  # nor in the reason
    assert "suggested" not in page and "Latest answers" not in page
    assert f"/states/{a.pk}/" not in page  # the state's page shows what its labels settle
    assert "bob 1 / 6" in page and "Undo" not in page  # who labelled how much, never what
    saved = _save(client, a, "billing", headers=HTMX).content.decode()
    assert "Saved for a: desk: billing — money. " in saved
    assert "The model answered shipping (v1 recorded)." in saved  # after hers, it may show


def test_a_set_that_shows_the_model_shows_it_before_the_label(client, blind):
    services.labelling_configure(
        question_set=blind["a"].question_set, user=factories.reviewer(), show_model=True
    )
    page = _as(client, blind["ann"]).get(PAGE).content.decode()
    assert _shown(page) == ("a", "desk") and "Blind" not in page
    assert "v1 recorded: <strong>shipping</strong>" in page and "confidence 0.40" in page
    assert "2 labels a question</span>" in page


def test_the_blind_queue_offers_only_what_is_open_to_this_labeller(client, blind):
    a, b = blind["a"], blind["b"]
    assert _save(_as(client, blind["ann"]), a, "billing").url.endswith(
        f"state={a.pk}&question=urgency"
    )
    page = client.get(PAGE, {"state": a.pk, "question": "desk"}).content.decode()
    assert _shown(page) == ("a", "urgency")  # her own label is given: not offered again
    LabelReservation.objects.update(until=timezone.now())  # her hold on a runs out
    page = _as(client, blind["bob"]).get(PAGE, {"state": a.pk, "question": "desk"})
    assert _shown(page.content.decode()) == ("a", "desk")  # one of the two it needs
    _save(client, a, "billing")
    assert SampleState.objects.get(pk=a.pk).expected == {"desk": "billing"}  # two agree
    LabelReservation.objects.update(until=timezone.now())
    page = _as(client, blind["cat"]).get(PAGE, {"state": a.pk, "question": "desk"})
    page = page.content.decode()
    assert _shown(page) == ("a", "urgency")  # it has every label it needs
    listed = page.split('id="next-heading"')[1]
    row = r'>a</a>\s*<span class="muted">— <code>urgency</code>, <code>churn</code></span>'
    assert re.search(row, listed)
    assert f"state={b.pk}" in listed and "2 states for you" in listed


def test_a_get_holds_nothing_a_post_holds_the_state_shown(client, blind):
    a, b = blind["a"], blind["b"]
    hold_url = reverse("label-hold", args=["tri", a.pk])
    page = _as(client, blind["ann"]).get(PAGE).content.decode()
    assert f'hx-post="{hold_url}" hx-trigger="load"' in page
    assert not LabelReservation.objects.exists()  # a GET never writes
    held = client.post(hold_url, headers={"HX-Request": "true"}).content.decode()
    assert "Held for you until" in held
    assert list(LabelReservation.objects.values_list("sample_state", "labeller__username")) == [
        (a.pk, "ann")
    ]
    page = _as(client, blind["bob"]).get(PAGE).content.decode()
    assert _shown(page)[0] == "b"  # a is held for ann for a few minutes
    refused = client.post(hold_url, headers={"HX-Request": "true"}).content.decode()
    assert "Another labeller holds this state" in refused
    swapped = _save(client, b, "other", headers=HTMX).content.decode()
    assert _shown(swapped) == ("b", "urgency") and "Held for you until" in swapped
    assert set(LabelReservation.objects.values_list("sample_state", "labeller__username")) == {
        (a.pk, "ann"),
        (b.pk, "bob"),
    }
    page = client.get(PAGE).content.decode()
    assert "Held for you until" in page and 'hx-trigger="load"' not in page
    assert _as(client, factories.user("reader")).post(hold_url).status_code == 403


def test_progress_per_labeller_is_done_over_wanted(client, blind):
    a, version = blind["a"], blind["version"]
    for who, qid, answer in (
        ("ann", "desk", "billing"),
        ("ann", "urgency", "1"),
        ("bob", "desk", "billing"),
    ):
        services.state_label(sample=a, question_id=qid, answer=answer, labeller=blind[who])
    progress = labels.labelling_progress(a.question_set, version, viewer=blind["cat"])
    assert progress.as_json() == {
        "version": 1,
        "needed": 2,
        "show_model": False,
        "blind": True,
        "states": 2,
        "questions": ["desk", "urgency", "churn"],
        "pairs": 6,
        "settled": 1,
        "settled_per_question": {"desk": 1, "urgency": 0, "churn": 0},
        "labellers": [  # the one asking first, then by name
            {"labeller": "cat", "done": 0, "wanted": 5},
            {"labeller": "ann", "done": 2, "wanted": 6},
            {"labeller": "bob", "done": 1, "wanted": 6},
        ],
    }
    services.state_label(sample=a, question_id="urgency", answer=2, labeller=blind["cat"])
    progress = labels.labelling_progress(a.question_set, version)  # urgency is disputed: full
    assert [(p.labeller, p.done, p.wanted) for p in progress.labellers] == [
        ("ann", 2, 6),
        ("bob", 1, 5),
        ("cat", 1, 5),
    ]
    page = _as(client, blind["bob"]).get(PAGE).content.decode()
    assert '<span class="labeller you">you 1 / 5</span>' in page
    assert "1 of 6 answers settled" in page and "2 labels a question, blind" in page


# --- the command line: state-label and labelling -------------------------------------------------


def _label_cli(state, question, answer, *more):
    return run_cli(
        "state-label", "--set", "tri", "--state", state, "--question", question, "--answer",
        answer, *more,
    )  # fmt: skip


def test_state_label_gives_one_labellers_label_blind_as_the_page(blind):
    code, out, err = _label_cli("a", "urgency", "2", "--user", "ann", "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "state": "a",
        "state_id": blind["a"].pk,
        "question": "urgency",
        "answer": 2,
        "words": "urgency: 2 — now",
        "labeller": "ann",
        "labels": 1,
        "needed": 2,
        "status": None,  # blind: nothing of the others' labels
        "expected": None,
    }
    code, out, err = _label_cli("a", "urgency", "2", "--user", "bob")
    assert (code, out.strip()) == (
        0,
        "a: urgency: 2 — now (bob's label; 2 of 2 labels given, blind)",
    )
    assert SampleState.objects.get(name="a").expected == {"urgency": 2}
    code, out, _ = _label_cli("a", "urgency", "1", "--user", "cat", "--json")
    assert (code, json.loads(out)) == (
        1,
        {"status": 409, "detail": "a: `urgency` has the 2 labels it needs already."},
    )
    assert _label_cli("a", "urgency", "1", "--user", "ann")[0] == 0  # she changes her own
    assert SampleState.objects.get(name="a").expected == {}  # 1 against 2: disputed
    assert StateLabel.objects.filter(current=True).count() == 2


def test_state_label_with_one_label_needed_settles_and_says_so(qs, owner):
    factories.draft(qs)
    services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    code, out, err = _label_cli("a", "churn", "true", "--user", "owner", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "settled" and json.loads(out)["expected"] is True
    code, out, _ = _label_cli("a", "desk", "other", "--user", "owner")
    assert (code, out.strip()) == (0, "a: desk: other — else (owner's label; settled)")


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        (("a", "desk", "billing"), 422, "A label is a person's: name the labeller (--user)."),
        (("a", "desk", "nonsense", "--user", "owner"), 422, "desk in v1 takes billing, shipping"),
        (("a", "nope", "x", "--user", "owner"), 422, "v1 has no question 'nope'"),
        (("ghost", "desk", "billing", "--user", "owner"), 404, "tri has no sample state ghost."),
        (("a", "desk", "billing", "--user", "reader"), 403, "Only authors label sample states."),
    ],
)
def test_state_label_refuses_in_words_with_the_status(qs, owner, args, status, words):
    factories.draft(qs)
    factories.user("reader")
    services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    code, out, _ = _label_cli(*args, "--json")
    assert code == 1 and json.loads(out)["status"] == status and words in json.loads(out)["detail"]
    assert not StateLabel.objects.exists()


def test_labelling_sets_how_many_labels_and_prints_progress_per_labeller(blind):
    services.state_label(
        sample=blind["a"], question_id="desk", answer="other", labeller=blind["ann"]
    )
    code, out, err = run_cli("labelling", "--set", "tri", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["set"] == "tri" and (shown["needed"], shown["blind"]) == (2, True)
    assert shown["labellers"] == [{"labeller": "ann", "done": 1, "wanted": 6}]
    code, out, err = run_cli(
        "labelling", "--set", "tri", "--needed", "3", "--show-model", "on", "--user", "rev"
    )
    assert code == 0, err
    assert out.splitlines() == [
        "tri v1: 3 labels a question, the model's answer shown; 0 of 6 answers settled "
        "(2 states × 3 questions)",
        "ann\t1 / 6",
    ]
    qs = blind["a"].question_set
    qs.refresh_from_db()
    assert (qs.labels_needed, qs.labels_show_model) == (3, True)
    code, out, _ = run_cli("labelling", "--set", "tri", "--needed", "9", "--json")
    assert code == 1 and json.loads(out)["status"] == 422 and "1 to 5 labels" in out
    code, out, _ = run_cli("labelling", "--set", "tri", "--needed", "1", "--user", "ann", "--json")
    assert code == 1 and json.loads(out)["status"] == 403
    assert run_cli("labelling", "--set", "nope")[0] == 1
    qs.refresh_from_db()
    assert qs.labels_needed == 3


def test_the_options_offered_are_the_labelled_versions_not_an_invalid_drafts(client, qs, owner):
    client.force_login(owner)
    v1 = services.version_submit(version=factories.draft(qs), author=owner)
    draft = services.version_draft_from(version=v1, author=owner)
    broken = json.loads(json.dumps(DOC))
    broken["desk"]["criteria"]["x" * 200] = "too long a name"
    services.version_save(version=draft, document=broken, base_revision=1, author=owner)
    services.sample_state_create(question_set=qs, name="a", state={"n": 1}, author=owner)
    for url in (reverse("state-create", args=["tri"]), reverse("label-states", args=["tri"])):
        page = client.get(url).content.decode()
        assert "x" * 200 not in page and "billing" in page, url
    page = client.get(reverse("state-create", args=["tri"]), {"version": "2"}).content.decode()
    assert "x" * 200 in page  # asked for by number, the draft's own options


def test_the_state_form_takes_a_nouls_answer_in_one_step_and_keeps_other_versions_labels(
    client, qs, owner
):
    client.force_login(owner)
    sample = services.sample_state_create(
        question_set=qs,
        name="a",
        state={"n": 1},
        author=owner,
        expected={"desk": "billing", "gone": "from an older version"},
    )
    url = reverse("state-edit", args=["tri", sample.pk])
    page = client.get(url).content.decode()
    assert 'type="radio" name="expected-churn" value="true"' in page  # one click, no select
    assert "per question of\n      <strong>v1</strong>" in page
    response = client.post(
        url,
        {
            "name": "a",
            "state": '{"n": 1}',
            "base_revision": "1",
            "version": "1",
            "expected-desk": "billing",
            "expected-churn": "true",
        },
    )
    assert response.status_code == 302
    sample.refresh_from_db()
    assert sample.expected == {"desk": "billing", "churn": True, "gone": "from an older version"}
