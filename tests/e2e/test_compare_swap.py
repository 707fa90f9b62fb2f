"""In a real browser at 1280 and 390 px: compare opens with the older version as its baseline
(though its run is the newer one), the verdict reads from the newer version's side, and one
click on Swap makes the other run the baseline — the URL naming it, so a reload keeps it — and
a second click swaps back. The scorecard and the review page show the same overall figure for
the same runs."""

from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import _card_run, scorecard_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _columns(url: str) -> list[str]:
    return parse_qs(urlparse(url).query)["col"]


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_baseline_is_the_older_version_and_one_click_swaps_it(page, live_server, width, height):
    world = scorecard_world()
    revisions = [s.current_revision() for s in world["set"].sample_states.order_by("name")]
    answers = list(
        world["run_v1"].items.filter(variant=0).order_by("id").values_list("answers", flat=True)
    )
    again = _card_run(world["set"], world["v1"], revisions, answers_of=lambda i, v: answers[i])
    v1, v2 = f"run:{again.pk}", f"run:{world['run_v2'].pk}"
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, get_user_model().objects.get(username="writer"))
    SHOTS.mkdir(parents=True, exist_ok=True)

    page.goto(f"{live_server.url}/sets/card/compare/")
    baseline = page.locator("th[data-baseline]")
    expect(baseline).to_contain_text(f"run {again.pk} · v1")
    evidence = page.locator(".compare-evidence")
    expect(evidence).to_contain_text("better on 12 states (7 fixed, 0 broken")
    page.screenshot(path=SHOTS / f"compare-baseline-{width}.png", full_page=True)
    page.screenshot(path=SHOTS / f"compare-baseline-{width}-viewport.png")
    evidence.screenshot(path=SHOTS / f"compare-baseline-evidence-{width}.png")
    assert overflow(page) == 0
    swap = page.get_by_role("button", name=f"Swap: make run {world['run_v2'].pk} · v2")
    swap.scroll_into_view_if_needed()
    box = swap.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width  # reachable on a phone

    swap.click()
    page.wait_for_url(lambda url: _columns(url) == [v2, v1])
    expect(baseline).to_contain_text(f"run {world['run_v2'].pk} · v2")
    expect(evidence).to_contain_text("worse on 12 states (0 fixed, 7 broken")
    expect(evidence).to_contain_text("−29.2 points (−47.7 to −8.3)")
    page.screenshot(path=SHOTS / f"compare-swapped-{width}-viewport.png")
    evidence.screenshot(path=SHOTS / f"compare-swapped-evidence-{width}.png")
    assert evidence.bounding_box()["y"] < height  # the swap lands on the verdict it changed
    assert overflow(page) == 0
    page.reload()  # the URL names the baseline: a reload keeps it
    expect(baseline).to_contain_text(f"run {world['run_v2'].pk} · v2")

    page.get_by_role("button", name=f"Swap: make run {again.pk} · v1").click()
    page.wait_for_url(lambda url: _columns(url) == [v1, v2])
    expect(baseline).to_contain_text(f"run {again.pk} · v1")
    expect(evidence).to_contain_text("+29.2 points (+8.3 to +47.7)")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_three_pages_show_one_overall_figure(page, live_server, width, height):
    world = scorecard_world()
    page.set_viewport_size({"width": width, "height": height})
    sign_in_user(page, live_server.url, get_user_model().objects.get(username="checker"))
    run = world["run_v2"]
    shown = {}
    for name, path in (
        ("compare", "/sets/card/compare/"),
        ("scorecard", "/sets/card/scorecard/"),
        ("review", "/sets/card/v2/review/"),
    ):
        page.goto(f"{live_server.url}{path}")
        page.screenshot(path=SHOTS / f"one-figure-{name}-{width}.png", full_page=True)
        page.screenshot(path=SHOTS / f"one-figure-{name}-{width}-viewport.png")
        figures = page.locator(f'.overall-figure[data-run="{run.pk}"]')
        shown[name] = set(figures.all_inner_texts())
    assert shown == {name: {"88% (69–96%, n = 24)"} for name in shown}
