"""Long lists come a page at a time, found by what they hold: the set list (by name, slug or
description), a set's sample states (by name, tag, with or without expected answers, failing in
the last run), and the editor's preview picker (the first states, and the one asked for). Their
queries and bytes do not grow with the number of sets or states."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from questions import roles, services
from questions.dev import standin
from questions.selectors import sets
from tests import factories
from tests.providers import DOC, StandIn

# runs execute on threads
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_databases]


@pytest.fixture
def writer(client):
    user = factories.author("writer")
    client.force_login(user)
    return user


@pytest.fixture
def provider(provider_factory):
    provider_factory(StandIn(), key=standin.KEY)


def _states(qs, writer, count: int) -> None:
    for i in range(count):
        services.sample_state_create(
            question_set=qs,
            name=f"state-{i:03d}",
            state={"n": i, "text": "é" * 10},
            author=writer,
            expected={"urgent": i % 2 == 0, "desk": "billing"} if i % 3 else {},
            tags=["even" if i % 2 == 0 else "odd", f"group{i % 4}"],
        )


def _names(body: str) -> list[str]:
    return [part.split("<")[0] for part in body.split('">state-')[1:] if part[:3].isdigit()]


def _measured(client, url: str) -> tuple[int, int]:
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured), len(response.content)


def test_the_set_list_comes_a_page_at_a_time_and_keeps_the_search(client, writer, monkeypatch):
    monkeypatch.setattr(sets, "SETS_PAGE", 3)
    for i in range(7):
        name = f"{'Alpha' if i < 5 else 'Beta'} {i}"
        services.question_set_create(slug=f"set-{i}", name=name, owner=writer)
    url = reverse("set-list")
    first = client.get(url).content.decode()
    assert first.count('<a href="/sets/set-') == 3
    assert "Sets 1–3 of 7" in first and "from=3" in first and 'rel="prev"' not in first
    last = client.get(url, {"from": "6"}).content.decode()
    assert last.count('<a href="/sets/set-') == 1 and "Sets 7–7 of 7" in last
    assert 'rel="next"' not in last and "from=3" in last  # back a page
    found = client.get(url, {"q": "alpha"}).content.decode()
    assert "Sets 1–3 of 5" in found and "q=alpha&amp;from=3" in found
    rows = client.get(url, {"q": "alpha", "from": "3"}, headers={"HX-Target": "set-rows"})
    part = rows.content.decode()
    assert "Sets 4–5 of 5" in part and "Beta" not in part
    # a start that is no number, or past the end, is the first or the last page
    assert "Sets 1–3 of 7" in client.get(url, {"from": "x"}).content.decode()
    assert "Sets 7–7 of 7" in client.get(url, {"from": "999"}).content.decode()


def test_the_set_page_lists_a_page_of_states_found_by_name_tag_and_label(
    client, writer, monkeypatch
):
    monkeypatch.setattr(sets, "STATES_PAGE", 2)
    qs = factories.question_set("s", owner=writer, doc=DOC)
    _states(qs, writer, 7)
    url = reverse("set-detail", args=["s"])
    first = client.get(url).content.decode()
    assert _names(first) == ["000", "001"] and "States 1–2 of 7" in first
    assert "states_from=2" in first
    size = qs.sample_states.get(name="state-000").size  # in bytes, é two of them
    assert f"<td>{size} bytes</td>" in first and size > len(qs.sample_states.first().state_text)
    nxt = client.get(
        url, {"states_from": "2"}, headers={"HX-Request": "true", "HX-Target": "state-rows"}
    )
    part = nxt.content.decode()
    assert "<html" not in part and _names(part) == ["002", "003"] and "Versions" not in part
    assert _names(client.get(url, {"state_name": "05"}).content.decode()) == ["005"]
    tagged = client.get(url, {"state_tag": "group1"}).content.decode()
    assert _names(tagged) == ["001", "005"] and "of 2" in tagged
    assert _names(client.get(url, {"state_tag": "group"}).content.decode()) == []  # whole tags
    labelled = client.get(url, {"state_show": "labelled"}).content.decode()
    assert _names(labelled) == ["001", "002"] and "of 4" in labelled
    unlabelled = client.get(url, {"state_show": "unlabelled"}).content.decode()
    assert _names(unlabelled) == ["000", "003"] and "of 3" in unlabelled
    both = client.get(url, {"state_show": "unlabelled", "state_tag": "odd"}).content.decode()
    assert _names(both) == ["003"]
    assert _names(client.get(url, {"state_show": "nonsense"}).content.decode()) == ["000", "001"]
    none = client.get(url, {"state_name": "nothing"}).content.decode()
    assert "No sample state matches" in none
    assert (
        "No sample state failed: this set has no finished run"
        in client.get(url, {"state_show": "failing"}).content.decode()
    )
    assert client.get(url, {"state_name": "a\x00b"}).status_code == 200


def test_the_set_page_finds_the_states_that_failed_in_the_last_run(
    client, writer, provider, monkeypatch
):
    qs = factories.question_set("s", owner=writer, doc=DOC)
    _states(qs, writer, 6)
    version = services.open_draft(qs)
    run = services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )
    run = services.batch_execute(run.pk)
    run.items.filter(sample_state__name="state-004").update(status="failed", answers=None)
    missed = {
        i.sample_state.name
        for i in run.items.select_related("sample_state")
        if i.misses or i.status == "failed"
    }
    assert "state-004" in missed and len(missed) < 6
    body = client.get(reverse("set-detail", args=["s"]), {"state_show": "failing"}).content.decode()
    assert {f"state-{n}" for n in _names(body)} == missed
    assert f'Failing in <a href="/runs/{run.pk}/">run {run.pk}</a>' in body


def test_the_editor_picker_lists_the_first_states_and_the_one_asked_for(
    client, writer, monkeypatch
):
    monkeypatch.setattr(sets, "PICKER_STATES", 2)
    qs = factories.question_set("s", owner=writer, doc=DOC)
    _states(qs, writer, 4)
    url = reverse("version-edit", args=["s", 1])
    body = client.get(url).content.decode()
    picker = body.split('class="preview-state"')[1].split("</label>")[0]
    assert picker.count("<option") == 3  # two states and "type a state…"
    assert "The first 2 of 4 states" in picker
    last = qs.sample_states.get(name="state-003")
    chosen = client.get(url, {"state": str(last.pk)}).content.decode()
    picker = chosen.split('class="preview-state"')[1].split("</label>")[0]
    assert f'value="{last.pk}" selected' in picker and picker.count("<option") == 4


def test_long_lists_cost_the_same_queries_and_about_the_same_bytes_at_any_size(
    client, writer, monkeypatch
):
    monkeypatch.setattr(sets, "STATES_PAGE", 3)
    monkeypatch.setattr(sets, "SETS_PAGE", 3)
    monkeypatch.setattr(sets, "PICKER_STATES", 3)
    few = factories.question_set("few", owner=writer, doc=DOC)
    _states(few, writer, 9)
    many = factories.question_set("many", owner=writer, doc=DOC)
    _states(many, writer, 40)

    def pages(slug: str) -> dict[str, str]:
        detail = reverse("set-detail", args=[slug])
        return {
            "set page": detail,
            "set page, by tag": f"{detail}?state_tag=even",
            "set page, unlabelled": f"{detail}?state_show=unlabelled",
            "set page, next states": f"{detail}?states_from=3",
            "editor": reverse("version-edit", args=[slug, 1]),
        }

    small = {name: _measured(client, url) for name, url in pages("few").items()}
    large = {name: _measured(client, url) for name, url in pages("many").items()}
    for name in small:
        assert large[name][0] == small[name][0], name  # queries
        assert abs(large[name][1] - small[name][1]) < 400, name  # bytes: the counts, a "Next" link
    list_few = _measured(client, reverse("set-list"))
    for i in range(30):
        factories.question_set(f"more-{i:02d}", owner=writer)
    list_many = _measured(client, reverse("set-list"))
    assert list_many[0] == list_few[0]
    assert abs(list_many[1] - list_few[1]) < 600  # other names, the same three rows
