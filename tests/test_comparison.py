"""The comparison grid on hand-made answers: flips, distances, filters, the URL, downloads."""

import csv
import io
import json

import pytest
from django.http import QueryDict
from django.urls import reverse

from questions import services
from questions.models import BatchItem
from questions.selectors import comparison, comparison_formats
from questions.views.compare import selection_of
from tests import factories
from tests.helpers import COMPARE_DOC as DOC
from tests.helpers import answers, desk

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(client):
    writer = factories.author("writer")
    client.force_login(writer)
    qs = factories.question_set("s", owner=writer, doc=DOC)
    a = services.sample_state_create(
        question_set=qs,
        name="a",
        state={"n": 1},
        author=writer,
        expected={"desk": "billing", "urgent": True, "level": 1},
    )
    b = services.sample_state_create(
        question_set=qs, name="b", state={"n": 2}, author=writer, expected={"desk": "tech"}
    )
    version = services.open_draft(qs)
    base = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    new = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    hand = {
        (base.pk, a.pk): answers(desk("billing", {"billing": 0.7, "tech": 0.3}), 0.6, 1.2),
        (base.pk, b.pk): answers(desk("tech", {"tech": 0.9, "other": 0.1}), 0.2, 0.4),
        (new.pk, a.pk): answers(desk("tech", {"billing": 0.4, "tech": 0.6}), 0.45, 1.6),
        (new.pk, b.pk): answers(desk("tech", {"tech": 0.8, "other": 0.2}), 0.3, 0.45),
    }
    for item in BatchItem.objects.select_related("sample_state"):
        item.status = "answered"
        item.answers = hand[(item.run_id, item.sample_state.sample_state_id)]
        item.save()
    return qs, base, new, a, b


def grid(qs, query: str):
    selection = selection_of(QueryDict(query), qs)
    return selection, *comparison.build(qs, selection, qs.owner)


def test_flips_and_distances_against_the_baseline(two_runs):
    qs, base, new, _a, _b = two_runs
    _, columns, rows = grid(qs, f"col=run:{base.pk}&col=run:{new.pk}")
    assert [c.label.split(" ·")[0] for c in columns] == [f"run {base.pk}", f"run {new.pk}"]
    by = {(r.state.name, r.question): r for r in rows}
    cell = by[("a", "desk")].cells[1]
    assert cell.flipped and cell.distance == pytest.approx(0.3)
    assert by[("a", "urgent")].cells[1].flipped  # 0.6 → 0.45 crosses 0.5
    assert by[("a", "level")].cells[1].flipped  # 1.2 → 1.6: nearest level 1 → 2
    assert not by[("b", "desk")].cells[1].flipped
    assert by[("b", "desk")].cells[1].distance == pytest.approx(0.1)
    assert by[("b", "urgent")].cells[1].distance == pytest.approx(0.1)
    assert by[("a", "desk")].cells[0].flipped is False  # the baseline is never marked
    assert by[("a", "desk")].cells[1].passed is False and by[("a", "desk")].cells[0].passed


def test_filters(two_runs):
    qs, base, new, *_ = two_runs
    cols = f"col=run:{base.pk}&col=run:{new.pk}"
    _, _, changes = grid(qs, cols + "&filter=changes")
    assert {(r.state.name, r.question) for r in changes} == {
        ("a", "desk"),
        ("a", "urgent"),
        ("a", "level"),
    }
    _, _, failures = grid(qs, cols + "&filter=failures")
    assert {(r.state.name, r.question) for r in failures} == {
        ("a", "desk"),
        ("a", "urgent"),
        ("a", "level"),
    }
    _, _, moved = grid(qs, cols + "&filter=changes&threshold=0.25")
    assert ("b", "urgent") in {(r.state.name, r.question) for r in moved}  # 0.2 → 0.3


def test_one_state(two_runs):
    qs, base, new, a, _ = two_runs
    _, _, rows = grid(qs, f"col=run:{base.pk}&col=run:{new.pk}&state={a.pk}")
    assert {r.state.name for r in rows} == {"a"} and len(rows) == 3


def test_the_selection_round_trips_through_the_url(two_runs):
    qs, base, new, a, _ = two_runs
    query = f"col=run:{new.pk}&col=run:{base.pk}&state={a.pk}&filter=failures&threshold=0.7"
    selection, *_ = grid(qs, query)
    again = selection_of(QueryDict(selection.query()), qs)
    assert (again.columns, again.state, again.filter, again.threshold) == (
        [f"run:{new.pk}", f"run:{base.pk}"],
        str(a.pk),
        "failures",
        0.7,
    )


def test_defaults_and_bad_input(two_runs):
    qs, base, new, *_ = two_runs
    selection, columns, _ = grid(qs, "filter=nope&threshold=2")
    assert selection.columns == [f"run:{base.pk}", f"run:{new.pk}"]  # the newest two runs
    assert len(selection.errors) == 2
    _, columns, _ = grid(qs, "col=bogus&col=run:999&col=v9:recorded&col=v1:typesafe")
    assert [bool(c.problem) for c in columns] == [True, True, True, False]
    # a live column over every state reads what was recorded; asking it needs one state
    assert columns[3].replay == "recorded" and not columns[3].askable
    assert "Pick one state" in columns[3].hint


def test_a_version_column_replays_recordings(two_runs, settings):
    qs, base, *_ = two_runs
    _, columns, rows = grid(qs, f"col=run:{base.pk}&col=v1:recorded")
    assert not columns[1].problem
    assert all(r.cells[1].answer is None for r in rows)  # nothing was recorded live yet


def test_the_page_and_its_downloads(client, two_runs):
    _qs, base, new, *_ = two_runs
    url = reverse("set-compare", args=["s"])
    query = {"col": [f"run:{base.pk}", f"run:{new.pk}"], "filter": "changes"}
    page = client.get(url, query).content.decode()
    assert page.count('class="cell flipped') >= 3 and "flip" in page
    grid = client.get(url, {"col": query["col"]}).content.decode()
    assert "<td>true</td>" in grid and "<td>True</td>" not in grid  # as the contract writes it
    data = json.loads(client.get(url, {**query, "format": "json"}).getvalue())
    assert data["selection"]["filter"] == "changes" and len(data["rows"]) == 3
    text = client.get(url, {**query, "format": "csv"}).getvalue().decode()
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][:4] == ["state", "question", "type", "expected"]
    assert len(table) == 4 and table[1][0] == "a"


# --- the CSV download and spreadsheets -----------------------------------------------------------

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def formula_names(client):
    """Question ids, option names, state names and expected answers a spreadsheet would take for
    formulas, and one run that answered every state."""
    writer = factories.author("writer")
    client.force_login(writer)
    doc = {
        f"{c}q": {"type": "choice", "criteria": {f"{c}opt": "the one", "other": "else"}}
        for c in FORMULA_STARTS
    }
    qs = factories.question_set("f", owner=writer, doc=doc)
    expected = {f"{c}q": f"{c}opt" for c in FORMULA_STARTS}
    for i, c in enumerate(FORMULA_STARTS):
        services.sample_state_create(
            question_set=qs, name=f"{c}state {i}", state=i, author=writer, expected=expected
        )
    run = services.batch_create(
        version=services.open_draft(qs), backend="recorded", user=writer, enqueue=False
    )
    for item in BatchItem.objects.all():
        item.status = "answered"
        item.answers = {
            f"{c}q": {
                "type": "choice",
                "choice": f"{c}opt",
                "probabilities": {f"{c}opt": 0.9, "other": 0.1},
                "confidence": 0.8,
            }
            for c in FORMULA_STARTS
        }
        item.save()
    return run


def test_the_csv_download_never_starts_a_cell_with_a_formula(client, formula_names):
    url = reverse("set-compare", args=["f"])
    response = client.get(url, {"col": f"run:{formula_names.pk}", "format": "csv"})
    table = list(csv.reader(io.StringIO(response.getvalue().decode(), newline="")))
    assert len(table) == 1 + 6 * 6
    assert [cell for row in table for cell in row if cell.startswith(FORMULA_STARTS)] == []
    rows = table[1:]
    assert {r[0] for r in rows} == {"'=state 0", "'+state 1", "'-state 2", "'@state 3"} | {
        "state 4",  # a state's name is stripped: a leading tab or CR never reaches the CSV
        "state 5",
    }
    assert {r[1] for r in rows} == {f"'{c}q" for c in FORMULA_STARTS}
    assert {r[3] for r in rows} == {f"'{c}opt" for c in FORMULA_STARTS}
    assert {r[4] for r in rows} == {f"'{c}opt (0.90)" for c in FORMULA_STARTS}
    assert {r[5] for r in rows} == {"false"}


def test_numbers_the_console_writes_stay_numbers_in_the_csv(two_runs):
    *_, a, _ = two_runs
    score = {"type": "score", "score": -0.5, "probabilities": {}, "confidence": 0.5}
    row = comparison.Row(
        state=a, question="level", qtype="score", expected=-1, cells=[comparison.Cell(score)]
    )
    row.cells.append(comparison.Cell(score, distance=-0.25))
    columns = [comparison.Column(key=f"run:{n}", label="") for n in (1, 2)]
    table = list(csv.reader(io.StringIO(comparison_formats.as_csv(columns, [row]))))
    baseline, changed = ["-0.50", "false", "", ""], ["-0.50", "false", "-0.2500", ""]
    assert table[1] == ["a", "level", "score", "-1", *baseline, *changed]


@pytest.mark.parametrize("query", ["", "&state=999999"])
def test_the_streamed_json_is_the_document_as_one_dump_writes_it(client, two_runs, query):
    _qs, base, new, *_ = two_runs
    url = reverse("set-compare", args=["s"])
    text = client.get(url + f"?col=run:{base.pk}&col=run:{new.pk}&format=json{query}").getvalue()
    document = json.loads(text)
    assert text.decode() == json.dumps(document, ensure_ascii=False, indent=2)
    assert len(document["rows"]) == (6 if not query else 0)


def test_a_cell_draws_at_most_eight_bars(two_runs):
    probabilities = {f"o{i}": round(0.01 * i, 2) for i in range(20)}
    bars = comparison.Cell({"type": "choice", "probabilities": probabilities}).bars
    assert len(bars) == comparison.MAX_BARS
    assert [title.split()[0] for title, _ in bars[:-1]] == [f"o{i}" for i in range(13, 20)]
    assert bars[-1][0].startswith("13 others") and bars[-1][1] == str(round(sum(range(13)) / 5))
    assert comparison.Cell({"type": "noul", "noul": 0.25}).bars == [("P(true) 0.25", "5")]


def test_the_csv_writes_true_and_false_as_the_contract_does_and_no_flip_without_an_answer():
    from types import SimpleNamespace

    column = comparison.Column("run:1", "run 1")
    cells = [comparison.Cell(None), comparison.Cell({"type": "noul", "noul": 0.9})]
    cells[1].flipped, cells[1].passed = True, False
    row = comparison.Row(SimpleNamespace(name="s"), "urgent", "noul", True, cells)
    text = comparison_formats.as_csv([column, column], [row])
    line = text.splitlines()[1].split(",")
    assert line[:4] == ["s", "urgent", "noul", "true"]
    assert line[5] == "" and line[9] == "true" and line[11] == "false"
    assert "True" not in text and "False" not in text


@pytest.fixture
def live_provider(settings):
    from questions.dev import standin
    from tests.providers import Provider, point_every_wire_at

    p = Provider(default=lambda body: standin.respond(body)[1])
    point_every_wire_at(settings, p)
    yield p
    p.stop()


def test_a_get_of_a_live_column_never_asks_and_never_writes(two_runs, client, live_provider):
    from questions.models import Decision, DecisionAnswer

    _qs, _base, _new, a, _b = two_runs
    url = f"{reverse('set-compare', args=['s'])}?col=v1:recorded&col=v1:typesafe&state={a.pk}"
    for _ in range(2):  # a reload, the back button, a prefetch
        page = client.get(url)
        assert page.status_code == 200
        assert "not asked yet" in page.content.decode()
    assert 'name="ask" value="v1:typesafe"' in page.content.decode()
    assert live_provider.requests == []
    assert (Decision.objects.count(), DecisionAnswer.objects.count()) == (0, 0)


def test_asking_a_live_column_is_a_post_that_records_and_the_grid_reads_it(
    two_runs, client, live_provider
):
    from questions.models import Decision

    qs, _base, _new, a, _b = two_runs
    query = f"col=v1:recorded&col=v1:typesafe&state={a.pk}"
    url = f"{reverse('set-compare', args=['s'])}?{query}"
    asked = client.post(url, {"ask": "v1:typesafe"})
    assert asked.status_code == 302 and f"state={a.pk}" in asked["Location"]
    assert "col=v1%3Atypesafe" in asked["Location"]  # the selection is kept
    assert len(live_provider.requests) == 1
    decision = Decision.objects.get()
    assert (decision.backend, decision.version.number) == ("typesafe", 1)
    page = client.get(asked["Location"])
    assert len(live_provider.requests) == 1  # the page read the recording
    selection = selection_of(QueryDict(query), qs)
    _columns, rows = comparison.build(qs, selection, qs.owner)
    assert all(r.cells[1].answer is not None for r in rows)
    assert all(r.cells[0].answer is not None for r in rows)  # `recorded` replays it as well
    assert "Asked v1:typesafe" in page.content.decode()


def test_a_live_column_is_asked_about_one_state_and_by_an_asker_only(
    two_runs, client, live_provider
):
    qs, *_ = two_runs
    every = f"{reverse('set-compare', args=['s'])}?col=v1:typesafe"
    refused = client.post(every, {"ask": "v1:typesafe"})
    assert refused.status_code == 422 and "Pick one state" in refused.content.decode()
    assert client.post(every, {"ask": "v9:typesafe"}).status_code == 422
    client.force_login(factories.user("viewer"))
    state = qs.sample_states.get(name="a")
    one = f"{reverse('set-compare', args=['s'])}?col=v1:typesafe&state={state.pk}"
    assert services.LIVE_ASKERS_ONLY in client.get(one).content.decode()
    assert client.post(one, {"ask": "v1:typesafe"}).status_code == 403
    assert live_provider.requests == []


# --- a question that changed type between the two columns' versions ------------------------------


@pytest.fixture
def retyped(client):
    """Two runs of two versions: `urgent` is a noul in v1 and a score in v2; the state expects
    a noul's true."""
    writer = factories.author("writer")
    client.force_login(writer)
    qs = factories.question_set(
        "t", owner=writer, doc={"urgent": {"type": "noul", "instructions": "It is urgent."}}
    )
    services.sample_state_create(
        question_set=qs, name="a", state=1, author=writer, expected={"urgent": True}
    )
    v1 = services.version_submit(version=services.open_draft(qs), author=writer)
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2,
        document={"urgent": {"type": "score", "criteria": ["low", "mid", "high"]}},
        base_revision=v2.revision,
        author=writer,
    )
    old = services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    new = services.batch_create(version=v2, backend="recorded", user=writer, enqueue=False)
    for item in BatchItem.objects.all():
        item.status = "answered"
        item.answers = {
            old.pk: {"urgent": {"type": "noul", "noul": 0.8}},
            new.pk: {
                "urgent": {
                    "type": "score",
                    "score": 1.6,
                    "confidence": 0.5,
                    "probabilities": {"0": 0.1, "1": 0.2, "2": 0.7},
                }
            },
        }[item.run_id]
        item.save()
    return old, new


@pytest.mark.parametrize("order", ["noul first", "score first"])
@pytest.mark.parametrize("shown", ["all", "changes", "failures"])
@pytest.mark.parametrize("form", ["page", "json", "csv"])
def test_a_question_that_changed_type_between_the_columns_compares(
    client, retyped, order, shown, form
):
    old, new = retyped
    runs = [old, new] if order == "noul first" else [new, old]
    query = {"col": [f"run:{r.pk}" for r in runs], "filter": shown}
    if form != "page":
        query["format"] = form
    response = client.get(reverse("set-compare", args=["t"]), query)
    assert response.status_code == 200
    body = response.getvalue().decode()
    if form == "json":
        assert json.loads(body)["selection"]["filter"] == shown
    if shown != "failures":  # a changed type is a change, so the row is there
        assert "urgent" in body


# --- per-option deltas --------------------------------------------------------------------------


def test_each_cell_says_how_each_option_moved_largest_first(two_runs):
    qs, base, new, _a, _b = two_runs
    _, _, rows = grid(qs, f"col=run:{base.pk}&col=run:{new.pk}")
    by = {(r.state.name, r.question): r for r in rows}
    moved = by[("a", "desk")].cells[1]
    assert moved.deltas == {"billing": -0.3, "tech": 0.3, "other": 0.0}  # 0.7 → 0.4, 0.3 → 0.6
    assert moved.moves == ["billing −0.30", "tech +0.30"]
    assert by[("b", "desk")].cells[1].deltas == {"tech": -0.1, "other": 0.1, "billing": 0.0}
    assert by[("a", "urgent")].cells[1].deltas == {"true": -0.15}  # a noul: P(true)
    assert by[("a", "desk")].cells[0].deltas is None  # the baseline moves against nothing


def test_the_page_shows_the_moves_and_the_json_has_option_deltas(client, two_runs):
    _qs, base, new, *_ = two_runs
    url = reverse("set-compare", args=["s"]) + f"?col=run:{base.pk}&col=run:{new.pk}"
    page = client.get(url).content.decode()
    assert "<span>billing −0.30</span><span>tech +0.30</span>" in page
    document = json.loads(client.get(url + "&format=json").getvalue())
    cells = {(r["state"], r["question"]): r["cells"] for r in document["rows"]}
    assert cells[("a", "desk")][1]["option_deltas"] == {"billing": -0.3, "tech": 0.3, "other": 0}
    assert cells[("a", "desk")][0]["option_deltas"] is None


def test_the_terminal_grid_lists_the_moves_too(two_runs):
    qs, base, new, *_ = two_runs
    _selection, columns, rows = grid(qs, f"col=run:{base.pk}&col=run:{new.pk}")
    text = comparison_formats.as_text(columns, rows)
    assert "a · desk (expected billing): [1] billing (0.70) ✓ | [2] tech (0.60) *0.30" in text
    assert "(billing −0.30, tech +0.30) ✗" in text


def test_a_cell_lists_at_most_three_moves_then_how_many_more():
    cell = comparison.Cell({"type": "choice"}, deltas={"a": 0.4, "b": -0.2, "c": -0.1, "d": -0.1})
    assert cell.moves == ["a +0.40", "b −0.20", "c −0.10", "1 more moved"]
    assert comparison.Cell({"type": "choice"}, deltas={"a": 0.0}).moves == []
