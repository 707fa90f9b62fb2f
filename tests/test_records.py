"""Records in the ecosystem's `.jevl` format, held to jevkit-core (a development dependency, the
oracle): what the console writes its reader reads, with ids equal to its `record_id`; what its
writer writes the console imports, and the `recorded` backend replays with no network. Bad
lines are refused by number with nothing imported; the run page's download costs the same
queries whatever the number of decisions."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jevkit_core
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from django.urls import reverse
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from jevkit_core import canonical as jevkit_canonical

from questions import roles, services
from questions.core import records, spec
from questions.dev import standin
from questions.models import BatchItem, Decision, DecisionAnswer
from questions.services import records as record_services
from tests import factories
from tests.providers import DOC, Provider, run_cli
from tests.strategies import json_values, question_maps

MODEL = "jev-1.13"
ANSWERS = {
    "urgent": {"type": "noul", "noul": 0.81},
    "desk": {
        "type": "choice",
        "choice": "billing",
        "probabilities": {"billing": 0.7, "tech": 0.2, "other": 0.1},
        "confidence": 0.6,
    },
}


# --- the id -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "state"),
    [
        (MODEL, {"text": "Zoë's ☃ 日本語 invoice\u2028", "n": 1.5, "big": 10**20, "i": -3}),
        ("ünïcødé/model", [0.1, 1e-7, 1e21, -0.0, 2.5e-300, True, None]),
        (MODEL, None),
        (MODEL, 'plain text, "quoted", tab\t and \\ backslash'),
    ],
)
def test_the_record_id_is_jevkit_cores(model, state):
    assert records.record_id(model, state, DOC) == jevkit_canonical.record_id(model, state, DOC)


@hsettings(max_examples=150, deadline=None)
@given(
    model=json_values.filter(lambda v: isinstance(v, str)) | json_values.map(str),
    state=json_values,
    questions=question_maps,
)
def test_the_record_id_is_jevkit_cores_for_any_json(model, state, questions):
    try:
        expected = jevkit_canonical.record_id(model, state, questions)
    except (UnicodeEncodeError, ValueError) as exc:  # a lone surrogate: neither can hash it
        with pytest.raises(type(exc)):
            records.record_id(model, state, questions)
        return
    assert records.record_id(model, state, questions) == expected


@hsettings(max_examples=200, deadline=None)
@given(
    value=json_values
    | st.fixed_dictionaries(
        {
            "v": st.just(1) | json_values,
            "id": json_values,
            "ts": json_values,
            "model": json_values,
            "request": json_values
            | st.fixed_dictionaries(
                {"state": json_values, "questions": question_maps | json_values}
            ),
            "answers": json_values,
        },
        optional={"usage": json_values, "label": json_values, "tags": json_values},
    )
)
def test_any_line_is_a_record_or_refused_by_its_number(value):
    text = json.dumps(value, ensure_ascii=False)
    try:
        record = records.read_line(text, 7, limits=spec.Limits())
    except records.RecordError as exc:
        assert exc.line == 7 and str(exc).startswith("line 7: ")
    else:
        assert record.id == jevkit_canonical.record_id(record.model, record.state, record.questions)


# --- worlds -------------------------------------------------------------------------------------


@pytest.fixture
def live(settings):
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_network(settings):
    """A provider on loopback that counts what reaches it: a replay must send it nothing."""
    provider = Provider()
    settings.TYPESAFE_API_KEY = "k-records"
    settings.TYPESAFE_BASE_URL = provider.url
    yield provider
    provider.stop()


def a_run(slug: str, states: int):
    """A set with DOC, `states` sample states (expected answers on the even ones; one state with
    text a JSON encoder could escape) and one finished typesafe run over them."""
    author = factories.author(f"{slug}-author")
    qs = factories.question_set(slug, owner=author, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"text": f"Zoë's invoice nº {i} — 日本", "n": i, "ratio": i / 4},
            author=author,
            expected={"urgent": True, "desk": "billing"} if i % 2 == 0 else {},
        )
    version = services.open_draft(qs)
    run = services.batch_create(version=version, backend="typesafe", user=author, enqueue=False)
    services.batch_execute(run.pk)
    return qs, version, run, author


def jevl_file(path, version, states, *, model=MODEL, answers=ANSWERS):
    """A file jevkit-core writes: one record per state, asking `version`'s questions."""
    questions = version.document
    written = [
        jevkit_core.Record(
            model=model,
            state=state,
            questions=questions,
            answers=answers,
            ts="2026-11-30T08:15:00Z",
            usage={"input_tokens": 120, "output_tokens": 9},
            label={"urgent": True},
        )
        for state in states
    ]
    jevkit_core.write_records(path, written)
    return written


# --- writing ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the run executes on threads
def test_jevkit_core_reads_every_record_the_console_writes(live, tmp_path):
    qs, _, run, _ = a_run("written", 4)
    target = tmp_path / "run.jevl"
    code, _, err = run_cli(
        "records", "--set", qs.slug, "--run", str(run.pk), "--format", "jevl", "-o", str(target)
    )
    assert code == 0, err
    assert f"wrote 4 records of written run {run.pk}" in err
    read = list(jevkit_core.read_records(target))
    decisions = list(Decision.objects.filter(pk__in=run.items.values("decision_id")).order_by("pk"))
    assert len(read) == len(decisions) == 4
    for record, decision in zip(read, decisions, strict=True):
        assert record.id == jevkit_canonical.record_id(record.model, record.state, record.questions)
        # the state and questions exactly as they went out: their bytes are the request's
        assert spec.wire_json(record.questions).decode() in decision.request_text
        assert spec.wire_json(record.state).decode() in decision.request_text
        assert list(record.questions["desk"]["criteria"]) == ["billing", "tech", "other"]
        assert record.model == decision.model_answered == standin.MODEL
        assert record.answers == {a.question_id: a.answer for a in decision.answers.all()}
        # in the provider's order, though a JSON column may sort the keys it stores
        raw = json.loads(decision.response_text)["answers"]
        assert list(record.answers) == list(raw)
        assert list(record.answers["desk"]) == [*raw["desk"], "nearUniform"]
        assert list(record.answers["desk"]["probabilities"]) == ["billing", "tech", "other"]
        assert record.usage == decision.usage
        assert record.ts == decision.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert record.meta == {"backend": "typesafe", "model_asked": run.model}
        expected = decision.sample_state.expected
        assert record.label == (expected or None)
    # standard output carries the same lines
    code, out, _ = run_cli("records", "--set", qs.slug, "--run", str(run.pk), "--format", "jevl")
    assert code == 0 and out == target.read_text(encoding="utf-8")
    # the version's records are its every call: here the run's
    code, out, _ = run_cli("records", "--set", qs.slug, "--version", "1", "--format", "jevl")
    assert code == 0 and out == target.read_text(encoding="utf-8")
    # read back into the console: every one is recorded already, none doubled
    before = Decision.objects.count()
    code, out, err = run_cli("records-import", str(target), "--set", qs.slug, "--json")
    assert code == 0, err
    assert json.loads(out)["imported"] == 0 and json.loads(out)["skipped"] == 4
    assert Decision.objects.count() == before


@pytest.mark.django_db
def test_failed_calls_and_other_sets_runs_are_not_written(tmp_path):
    qs = factories.question_set("empty", doc=DOC)
    code, _, err = run_cli("records", "--set", "empty", "--version", "1", "--format", "jevl")
    assert code == 0 and "wrote 0 records" in err
    other = factories.question_set("other", doc=DOC)
    code, _, err = run_cli("records", "--set", "other", "--run", "999", "--format", "jevl")
    assert code == 1 and "other has no run 999" in err
    code, _, err = run_cli("records", "--set", qs.slug, "--version", "7", "--format", "jevl")
    assert code == 1 and "has no version 7" in err
    with pytest.raises(CommandError, match="invalid choice: 'csv'"):
        run_cli("records", "--set", other.slug, "--version", "1", "--format", "csv")


# --- reading ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_file_jevkit_core_writes_imports_and_replays_with_no_network(no_network, tmp_path):
    author = factories.author("importer")
    qs = factories.question_set("imported", owner=author, doc=DOC)
    version = services.open_draft(qs)
    known = {"text": "Zoë's invoice is overdue", "amount": 12.5}
    services.sample_state_create(question_set=qs, name="known", state=known, author=author)
    unknown = {"text": "a state no sample state holds"}
    path = tmp_path / "golden.jevl"
    written = jevl_file(path, version, [known, unknown])

    code, out, err = run_cli("records-import", str(path), "--set", qs.slug, "--user", "importer")
    assert code == 0, err
    assert "imported: 2 records imported (v1: 2), 0 skipped" in out
    assert "1 name a state that is no sample state of imported" in out

    stored = list(Decision.objects.order_by("pk"))
    assert [d.request_id for d in stored] == [r.id for r in written]
    for decision, record in zip(stored, written, strict=True):
        assert decision.backend == "typesafe" and decision.status == 200
        assert decision.model_answered == decision.model_asked == MODEL
        assert "sha256:" + decision.request_sha256 == record.id  # the request's canonical hash
        assert decision.created_at == datetime(2026, 11, 30, 8, 15, tzinfo=UTC)
        assert decision.version == version and decision.user == author
        assert decision.usage == {"input_tokens": 120, "output_tokens": 9}
    assert stored[0].sample_state.name == "known" and stored[1].sample_state is None

    # replayed by the recorded backend, through the command line and the service
    code, out, err = run_cli(
        "ask", "--set", qs.slug, "--state", "known", "--backend", "recorded", "--model", MODEL
    )
    assert code == 0, err
    replay = json.loads(out)
    assert replay["answers"]["desk"]["choice"] == "billing"
    assert replay["answers"]["urgent"]["noul"] == 0.81
    outcome = services.decision_ask(
        backend="recorded", document=DOC, state=unknown, user=roles.OPERATOR, model=MODEL
    )
    assert outcome.error is None and outcome.checked.answers["desk"]["choice"] == "billing"
    assert no_network.requests == []

    # and written out again as the same records
    code, out, _ = run_cli("records", "--set", qs.slug, "--version", "1", "--format", "jevl")
    again = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in again] == [r.id for r in written]
    assert [r["request"] for r in again] == [
        {"state": r.state, "questions": r.questions} for r in written
    ]
    assert again[0]["ts"] == "2026-11-30T08:15:00Z"

    # importing it twice keeps one of each
    code, out, _ = run_cli("records-import", str(path), "--set", qs.slug, "--user", "importer")
    assert code == 0 and "0 records imported, 2 skipped (recorded already)" in out
    assert Decision.objects.count() == 2 and DecisionAnswer.objects.count() == 4


def _states(qs, author, count: int) -> list[dict]:
    """`count` sample states of `qs`, each expecting billing; their states."""
    states = [{"ticket": f"invoice {i} charged twice"} for i in range(count)]
    for i, state in enumerate(states):
        services.sample_state_create(
            question_set=qs, name=f"t{i}", state=state, author=author, expected={"desk": "billing"}
        )
    return states


@pytest.mark.django_db
def test_records_the_console_wrote_replay_in_a_fresh_console_as_the_application_asked(
    no_network, tmp_path, settings
):
    """The walkthrough's case: records a console wrote (`model` the model that answered,
    `meta.model_asked` the alias the application asked) imported into a fresh console and
    replayed by `batch --backend recorded`, which asks the alias as the application's CI does:
    every state answered, none a 404. The model that answered replays them too."""
    settings.DECISIONS_MODEL = "jev-latest"
    author = factories.author("fresh")
    qs = factories.question_set("fresh", owner=author, doc=DOC)
    version = services.open_draft(qs)
    path = tmp_path / "run.jevl"
    written = [
        jevkit_core.Record(
            model="jev-1.13.0",
            state=state,
            questions=version.document,
            answers=ANSWERS,
            meta={"backend": "typesafe", "model_asked": "jev-latest"},
        )
        for state in _states(qs, author, 4)
    ]
    jevkit_core.write_records(path, written)
    code, out, err = run_cli("records-import", str(path), "--set", "fresh")
    assert code == 0 and "4 records imported" in out, err
    stored = Decision.objects.get(request_id=written[0].id)
    assert (stored.model_asked, stored.model_answered) == ("jev-latest", "jev-1.13.0")

    for model in ((), ("--model", "jev-1.13.0")):
        code, out, err = run_cli(
            "batch", "--set", "fresh", "--version", "1", "--backend", "recorded", *model, "--json"
        )
        summary = json.loads(out)
        assert code == 0, err
        assert (summary["answered"], summary["failed"], summary["pass_rate"]) == (4, 0, 1.0)
    assert no_network.requests == []
    # and written out again, each record is the one imported, its model asked kept
    code, out, _ = run_cli("records", "--set", "fresh", "--version", "1", "--format", "jevl")
    again = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in again] == [r.id for r in written]
    assert {r["meta"]["model_asked"] for r in again} == {"jev-latest"}


@pytest.mark.django_db
def test_a_replay_of_records_that_name_no_model_asked_says_which_models_it_holds(
    no_network, tmp_path, settings
):
    """Records that say only which model answered (jevkit-core's, with no `meta`) replay
    under that model; asked for another, every state's 404 names the models recorded and how
    to ask for one — and the batch says it once, not only "4 failed"."""
    settings.DECISIONS_MODEL = "jev-latest"
    author = factories.author("named")
    qs = factories.question_set("named", owner=author, doc=DOC)
    version = services.open_draft(qs)
    path = tmp_path / "golden.jevl"
    jevl_file(path, version, _states(qs, author, 4), model="jev-1.13.0")
    assert run_cli("records-import", str(path), "--set", "named")[0] == 0
    batch = ("batch", "--set", "named", "--version", "1", "--backend", "recorded")

    code, out, err = run_cli(*batch)
    assert code == 1 and "0/4 answered, 4 failed" in out
    told = (
        "Nothing recorded through typesafe for these questions and this state with model "
        "jev-latest; they were recorded with jev-1.13.0: replay one of those (--model "
        "jev-1.13.0 on the command line)."
    )
    assert f"Every state failed: 404: {told}" in err
    items = BatchItem.objects.filter(run__question_set=qs)
    assert {(i.error_status, i.error_detail) for i in items} == {(404, told)}
    # one call asks the same: the state's 404 names the models
    outcome = services.decision_ask(
        backend="recorded", document=DOC, state={"ticket": "invoice 0 charged twice"},
        user=roles.OPERATOR, model="jev-latest",
    )  # fmt: skip
    assert (outcome.status, outcome.error.detail) == (404, told)

    code, out, err = run_cli(*batch, "--model", "jev-1.13.0")
    assert code == 0 and "4/4 answered, 0 failed" in out, err
    # nothing recorded at all for a state: nothing to name, ask live first
    nothing = services.decision_ask(
        backend="recorded", document=DOC, state={"ticket": "never asked"},
        user=roles.OPERATOR, model="jev-latest",
    )  # fmt: skip
    assert nothing.status == 404 and "ask typesafe live first" in nothing.error.detail
    assert no_network.requests == []


def _line(version, state, **changes) -> str:
    record = jevkit_core.Record(
        model=MODEL, state=state, questions=version.document, answers=ANSWERS
    ).to_dict()
    record.update(changes)
    return json.dumps(record, ensure_ascii=False)


def _bad_answers(version):
    answers = json.loads(json.dumps(ANSWERS))
    answers["desk"]["probabilities"] = {"billing": 0.9, "tech": 0.5, "other": 0.1}
    return _line(version, {"n": 9}, answers=answers)


BAD_LINES = {
    "not JSON": (lambda v: '{"v": 1, "id": ', "line 4: not JSON"),
    "NaN": (lambda v: _line(v, {"n": 1}).replace('"n": 1', '"n": NaN'), "line 4: not JSON"),
    "v 2": (lambda v: _line(v, {"n": 1}, v=2), "line 4: `v` is 2"),
    "no ts": (
        lambda v: json.dumps(
            {k: x for k, x in json.loads(_line(v, {"n": 1})).items() if k != "ts"}
        ),
        "line 4: missing `ts`",
    ),
    "another id": (
        lambda v: _line(v, {"n": 1}, id="sha256:" + "0" * 64),
        "line 4: `id` is not the record's",
    ),
    "sums": (_bad_answers, "line 4: the answers break the typesafe wire's rules"),
    "unanswered": (
        lambda v: _line(v, {"n": 1}, answers={"urgent": ANSWERS["urgent"]}),
        "`desk` has no answer",
    ),
    "an array": (lambda v: "[1, 2]", "line 4: a record is a JSON object"),
    "a model asked that is no name": (
        lambda v: _line(v, {"n": 1}, meta={"model_asked": 13}),
        "line 4: `meta.model_asked` must be the name of the model asked",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("bad", list(BAD_LINES), ids=list(BAD_LINES))
def test_a_bad_line_is_refused_by_number_and_nothing_is_imported(bad, tmp_path, monkeypatch):
    monkeypatch.setattr(record_services, "CHUNK", 1)  # the good lines are stored, then undone
    qs = factories.question_set("strict", doc=DOC)
    version = services.open_draft(qs)
    make, message = BAD_LINES[bad]
    path = tmp_path / "bad.jevl"
    lines = [_line(version, {"n": 1}), "", _line(version, {"n": 2}), make(version)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run_cli("records-import", str(path), "--set", "strict", "--json")
    assert code == 1
    detail = json.loads(out)
    assert detail["status"] == 422 and message in detail["detail"]
    assert "Nothing was imported" in detail["detail"]
    assert Decision.objects.count() == 0 and DecisionAnswer.objects.count() == 0


@pytest.mark.django_db
def test_records_of_questions_no_version_holds_are_reported_not_guessed(tmp_path):
    qs = factories.question_set("matched", doc=DOC)
    version = services.open_draft(qs)
    other = {**DOC, "urgent": {"type": "noul", "instructions": "Is it urgent today?"}}
    path = tmp_path / "mixed.jevl"
    lines = [
        _line(version, {"n": 1}),
        json.dumps(
            jevkit_core.Record(
                model=MODEL, state={"n": 2}, questions=other, answers=ANSWERS
            ).to_dict()
        ),
        json.dumps(
            jevkit_core.Record(
                model=MODEL, state={"n": 3}, questions=other, answers=ANSWERS
            ).to_dict()
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli("records-import", str(path), "--set", "matched")
    assert code == 1
    assert "The questions of lines 2, 3 are no version of matched" in err
    assert "Nothing was imported" in err and Decision.objects.count() == 0
    # a version with those questions takes them
    draft = services.version_save(version=version, document=other, base_revision=1, author=qs.owner)
    path.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    code, _, err = run_cli("records-import", str(path), "--set", "matched")
    assert code == 0, err
    assert Decision.objects.filter(version=draft).count() == 2


@pytest.mark.django_db
def test_only_authors_import_records(tmp_path):
    qs = factories.question_set("guarded", doc=DOC)
    path = tmp_path / "one.jevl"
    jevl_file(path, services.open_draft(qs), [{"n": 1}])
    factories.user("reader")
    code, out, _ = run_cli(
        "records-import", str(path), "--set", "guarded", "--user", "reader", "--json"
    )
    assert code == 1 and json.loads(out)["status"] == 403
    code, _, err = run_cli("records-import", str(tmp_path / "missing.jevl"), "--set", "guarded")
    assert code == 2 and "cannot read" in err
    assert Decision.objects.count() == 0


# --- the pages ----------------------------------------------------------------------------------


def _download(client, run):
    response = client.get(reverse("run-records", args=[run.pk]))
    assert response.status_code == 200 and response.streaming
    return response, b"".join(response.streaming_content)


@pytest.mark.django_db(transaction=True)
def test_the_run_page_downloads_its_records(client, live):
    qs, _, run, author = a_run("downloaded", 3)
    client.force_login(factories.user("any-reader"))
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert reverse("run-records", args=[run.pk]) in page
    response, body = _download(client, run)
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == (
        f'attachment; filename="downloaded-run-{run.pk}.jevl"'
    )
    _, out, _ = run_cli("records", "--set", qs.slug, "--run", str(run.pk), "--format", "jevl")
    assert body.decode() == out and len(out.splitlines()) == 3
    assert client.post(reverse("run-records", args=[run.pk])).status_code == 405
    # a replay recorded nothing of its own: no download to offer
    replay = services.batch_create(
        version=run.version, backend="recorded", user=author, enqueue=False
    )
    services.batch_execute(replay.pk)
    page = client.get(reverse("run-detail", args=[replay.pk])).content.decode()
    assert "Open in compare" in page and reverse("run-records", args=[replay.pk]) not in page


@pytest.mark.django_db(transaction=True)
def test_the_download_costs_the_same_queries_whatever_the_number_of_decisions(
    client, live, django_assert_num_queries
):
    _, _, small, _ = a_run("few", 2)
    _, _, large, _ = a_run("many", 9)
    assert BatchItem.objects.filter(run=large, decision__isnull=False).count() == 9
    client.force_login(factories.user("counting-reader"))
    _download(client, small)  # the session's first read
    # the session and user, the run, the decisions, their answers
    with django_assert_num_queries(5):
        _, few = _download(client, small)
    with django_assert_num_queries(5):
        _, many = _download(client, large)
    assert len(few.splitlines()) == 2 and len(many.splitlines()) == 9


@pytest.mark.django_db
def test_the_set_page_imports_an_uploaded_file(client, no_network, tmp_path):
    author = factories.author("uploader")
    qs = factories.question_set("uploads", owner=author, doc=DOC)
    version = services.open_draft(qs)
    path = tmp_path / "up.jevl"
    jevl_file(path, version, [{"n": 1}, {"n": 2}])
    url = reverse("records-upload", args=[qs.slug])
    client.force_login(author)
    page = client.get(reverse("set-detail", args=[qs.slug])).content.decode()
    assert 'enctype="multipart/form-data"' in page and url in page

    upload = SimpleUploadedFile("up.jevl", path.read_bytes(), "application/x-ndjson")
    response = client.post(url, {"records": upload}, follow=True)
    assert response.status_code == 200
    assert "Imported 2 records (v1: 2); 0 skipped (recorded already)." in response.content.decode()
    assert Decision.objects.count() == 2

    upload = SimpleUploadedFile("up.jevl", path.read_bytes(), "application/x-ndjson")
    response = client.post(url, {"records": upload}, follow=True)
    assert "Imported 0 records; 2 skipped (recorded already)." in response.content.decode()

    bad = path.read_bytes() + b'{"v": 1}\n'
    response = client.post(url, {"records": SimpleUploadedFile("bad.jevl", bad)})
    assert response.status_code == 422
    assert "line 3: missing `id`" in response.content.decode()
    response = client.post(url, {})
    assert response.status_code == 422 and "Choose a .jevl file" in response.content.decode()
    assert Decision.objects.count() == 2

    reader = factories.user("upload-reader")
    client.force_login(reader)
    upload = SimpleUploadedFile("up.jevl", path.read_bytes())
    assert client.post(url, {"records": upload}).status_code == 403
    assert (
        'enctype="multipart/form-data"'
        not in client.get(reverse("set-detail", args=[qs.slug])).content.decode()
    )
