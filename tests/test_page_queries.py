"""Query-count pins: every page that lists states, versions or runs costs the same number of
queries whatever their number (no N+1), and the pages that grow with the data show a bounded
part of it (the comparison grid a page of states, the editor closed cards)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from questions import services
from questions.dev import standin
from questions.models import BatchRun
from questions.selectors import comparison
from tests import factories
from tests.providers import DOC, StandIn

# runs execute on threads
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(provider_factory):
    provider_factory(StandIn(), key=standin.KEY)


def world(slug: str, *, states: int, versions: int, runs: int, author, reviewer):
    """A set with `versions` versions (approved ones labelled, the newest in review), `states`
    sample states with expected answers, and `runs` typesafe runs over them."""
    qs = factories.question_set(slug, owner=author, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"state-{i:03d}",
            state={"n": i},
            author=author,
            expected={"urgent": i % 2 == 0, "desk": "billing"},
        )
    for n in range(1, versions + 1):
        draft = services.open_draft(qs)
        services.version_submit(version=draft, author=author)
        if n < versions:
            label = "production" if n == 1 else "staging"
            services.version_approve(
                confirm_weak_evidence=True, version=draft, reviewer=reviewer, label=label
            )
            services.version_draft_from(version=draft, author=author)
    newest = qs.versions.order_by("-number").first()
    for i in range(runs):
        version = newest if i % 2 else qs.versions.order_by("number").first()
        run = services.batch_create(version=version, backend="typesafe", user=author, enqueue=False)
        services.batch_execute(run.pk)
    return qs


def pages(qs) -> dict[str, str]:
    runs = list(BatchRun.objects.filter(question_set=qs).order_by("pk"))
    newest = qs.versions.order_by("-number").first().number
    state = qs.sample_states.order_by("name").first()
    compare = reverse("set-compare", args=[qs.slug])
    cols = f"col=run:{runs[0].pk}&col=run:{runs[1].pk}"
    return {
        "set list": reverse("set-list"),  # every set with its last pass rate
        "set page": reverse("set-detail", args=[qs.slug]),
        "set history": reverse("set-history", args=[qs.slug]),
        "label page": reverse("label-states", args=[qs.slug]),
        "label page, a state": reverse("label-states", args=[qs.slug]) + f"?state={state.pk}",
        "editor": reverse("version-edit", args=[qs.slug, newest]),
        "review page": reverse("version-review", args=[qs.slug, newest]),
        "run page": reverse("run-detail", args=[runs[-1].pk]),
        "run page, next states": reverse("run-detail", args=[runs[-1].pk]) + "?items_from=1",
        "compare, default link": compare,
        "compare, 3 runs": f"{compare}?{cols}&col=run:{runs[2].pk}",
        "compare, 2 runs + recorded": f"{compare}?{cols}&col=v1:recorded",
        "compare, changes only": f"{compare}?{cols}&filter=changes",
        "compare, one state": f"{compare}?{cols}&state={state.pk}",
        "compare, next page": f"{compare}?{cols}&start=1",
    }


def counted(client, url: str) -> int:
    client.get(url)  # the first view may fill a per-process cache (a comparison not stored)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    if "DEBUG_PINS" in __import__("os").environ:
        print(url, *[q["sql"][:150] for q in captured.captured_queries], sep="\n  ")
    return len(captured)


def test_page_queries_do_not_grow_with_states_versions_or_runs(client, provider):
    author, reviewer = factories.author("pin-author"), factories.reviewer("pin-reviewer")
    client.force_login(author)
    small = world("small", states=2, versions=2, runs=3, author=author, reviewer=reviewer)
    large = world("large", states=7, versions=5, runs=5, author=author, reviewer=reviewer)
    few = {
        name: counted(client, url) for name, url in {**pages(small), **found_pages(small)}.items()
    }
    many = {
        name: counted(client, url) for name, url in {**pages(large), **found_pages(large)}.items()
    }
    assert many == few
    # compare reads one more than it did: the repeatability control its noise floor comes from;
    # and one more for every column at once: the ambiguous pairs each pass rate leaves out
    assert few["editor"] <= 8 and few["compare, 3 runs"] <= 16


def test_the_comparison_shows_a_page_of_states_and_loads_only_their_answers(
    client, provider, monkeypatch
):
    author, reviewer = factories.author("pin-author"), factories.reviewer("pin-reviewer")
    client.force_login(author)
    qs = world("paged", states=5, versions=1, runs=2, author=author, reviewer=reviewer)
    monkeypatch.setattr(comparison, "PAGE_STATES", 2)
    url = reverse("set-compare", args=[qs.slug])
    first = client.get(url).content.decode()
    assert first.count('class="state-link"') == 2 * len(DOC)  # 2 states × one row a question
    assert "state-000" in first and "state-002" not in first
    assert "start=2" in first and 'hx-trigger="revealed"' in first
    nxt = client.get(url, {"start": "2"}, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in nxt and "state-002" in nxt and "state-004" not in nxt
    assert "start=4" in nxt
    last = client.get(url, {"start": "4"}, headers={"HX-Request": "true"}).content.decode()
    assert "state-004" in last and "start=" not in last
    # the downloads are every row, however the page is cut
    rows = client.get(url, {"format": "csv"}).getvalue().decode().strip().splitlines()
    assert len(rows) == 1 + 5 * len(DOC)


def test_changes_only_costs_the_same_queries_however_many_states_it_passes_over(
    client, provider, monkeypatch
):
    """Two runs that decide alike on every state but the last: the page reads the one state
    the database finds moved, not every state a chunk at a time (a query per column each)."""
    from questions.core import metrics
    from questions.models import BatchItem
    from questions.services.summaries import store_moves

    author, reviewer = factories.author("pin-author"), factories.reviewer("pin-reviewer")
    client.force_login(author)
    monkeypatch.setattr(comparison, "PAGE_STATES", 2)

    def changes_page(slug: str, states: int) -> tuple[int, str]:
        qs = world(slug, states=states, versions=1, runs=2, author=author, reviewer=reviewer)
        runs = list(BatchRun.objects.filter(question_set=qs).order_by("pk"))
        last = runs[1].items.select_related("sample_state").order_by("-sample_state__name")[0]
        moved = dict(last.answers)
        chosen = moved["desk"]["choice"]
        moved["desk"] = {**moved["desk"], "choice": "tech" if chosen != "tech" else "other"}
        BatchItem.objects.filter(pk=last.pk).update(answers=moved, decided=metrics.decided(moved))
        store_moves(runs[1])  # as its end records them, with the answer it moved to
        url = reverse("set-compare", args=[qs.slug])
        url += f"?col=run:{runs[0].pk}&col=run:{runs[1].pk}&filter=changes"
        return counted(client, url), client.get(url).content.decode()

    few, few_page = changes_page("few", 3)
    many, many_page = changes_page("many", 14)
    assert many == few
    assert "state-002" in few_page and "state-013" in many_page
    assert few_page.count('class="state-link"') == many_page.count('class="state-link"') == 1


def test_the_run_page_lists_its_states_a_page_at_a_time(client, provider, monkeypatch):
    from questions.views import runs

    author, reviewer = factories.author("pin-author"), factories.reviewer("pin-reviewer")
    client.force_login(author)
    qs = world("listed", states=5, versions=1, runs=1, author=author, reviewer=reviewer)
    monkeypatch.setattr(runs, "ITEMS_PAGE", 2)
    run = BatchRun.objects.get(question_set=qs)
    url = reverse("run-detail", args=[run.pk])
    # the states with the most missed answers come first, then the others, each by name
    order = sorted(
        run.items.select_related("sample_state"),
        key=lambda i: (not i.misses, -(i.misses or 0), i.sample_state.name),
    )
    names = [i.sample_state.name for i in order]
    assert any(i.misses for i in order) and not all(i.misses for i in order)
    # the results table's part of the page (the report's misses above it name states too)
    first = client.get(url).content.decode().split('id="results-heading"')[1]
    assert names[0] in first and names[1] in first and names[2] not in first
    assert "items_from=2" in first
    nxt = client.get(url, {"items_from": "4"}, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in nxt and names[4] in nxt and names[3] not in nxt
    assert "items_from=" not in nxt
    # the filter keeps to the failures, and its next page keeps the filter
    failing = client.get(url, {"show": "failing"}).content.decode()
    missed = [i.sample_state.name for i in order if i.misses]
    assert all(n in failing for n in missed[:2])
    assert all(n not in failing.split("results-heading")[-1] for n in names if n not in missed)


def measured(client, url: str) -> tuple[int, int]:
    """The queries and bytes of a page's second view."""
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured), len(response.content)


def found_pages(qs) -> dict[str, str]:
    """The paged lists found by what they hold, beside the pages above."""
    detail = reverse("set-detail", args=[qs.slug])
    return {
        "set page, by tag": f"{detail}?state_tag=nothing",
        "set page, by name": f"{detail}?state_name=state-00",
        "set page, unlabelled": f"{detail}?state_show=unlabelled",
        "set page, failing": f"{detail}?state_show=failing",
        "set page, next states": f"{detail}?states_from=2",
        "set list, searched": reverse("set-list") + "?q=a&from=2",
    }


def test_page_queries_and_bytes_do_not_grow_with_states_or_sets(client, provider, monkeypatch):
    """With the versions and runs the same, more states and more sets cost no query and no
    byte beyond the digits of the counts: every page shows a bounded part of them."""
    from questions.selectors import review, sets
    from questions.views import runs

    for name in ("STATES_PAGE", "SETS_PAGE", "PICKER_STATES"):
        monkeypatch.setattr(sets, name, 2)
    monkeypatch.setattr(review, "REVIEW_FLIPS_SHOWN", 1)  # stored with the runs so
    monkeypatch.setattr(runs, "ITEMS_PAGE", 2)
    author, reviewer = factories.author("pin-author"), factories.reviewer("pin-reviewer")
    client.force_login(author)
    small = world("small", states=5, versions=2, runs=3, author=author, reviewer=reviewer)
    large = world("large", states=11, versions=2, runs=3, author=author, reviewer=reviewer)
    for i in range(3):
        factories.question_set(f"another-{i}", owner=author)

    def views(qs) -> dict[str, tuple[int, int]]:
        urls = {**pages(qs), **found_pages(qs)}
        urls.pop("set list")  # measured below, against the number of sets
        urls.pop("set list, searched")
        return {  # the comparison grid's pages are pinned above
            name: measured(client, url)
            for name, url in urls.items()
            if not name.startswith("compare")
        }

    few, many = views(small), views(large)
    for name in few:
        assert many[name][0] == few[name][0], name
        assert abs(many[name][1] - few[name][1]) < 500, (name, few[name], many[name])
    sets_few = [
        measured(client, reverse("set-list")),
        measured(client, found_pages(small)["set list, searched"]),
    ]
    for i in range(12):
        factories.question_set(f"more-{i:02d}", owner=author)
    sets_many = [
        measured(client, reverse("set-list")),
        measured(client, found_pages(small)["set list, searched"]),
    ]
    for (q_few, b_few), (q_many, b_many) in zip(sets_few, sets_many, strict=True):
        assert q_many == q_few and abs(b_many - b_few) < 600
