"""In a real browser, at a laptop's width and at a phone's: the set page says per label who
fetched it last and warns of a label that moved with nothing fetching it since; a drift run's
page shows the answers that shifted beside those that flipped."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from questions import roles, services
from questions.core import controls
from questions.models import QuestionSet, Version
from questions.services import controls as control_services
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user
from tests.helpers import make_world
from tests.providers import DOC, TOPICS, Provider, reads_the_words

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_set_page_says_who_fetched_each_label(page, live_server):
    make_world()
    qs = QuestionSet.objects.get(slug="s")
    token, _ = services.api_token_create(name="runtime-prod-eu-west-1", user=roles.OPERATOR)
    v1 = qs.versions.get(number=1)
    services.export_fetch_record(
        token_id=token.pk,
        set_id=qs.pk,
        label="production",
        version_id=v1.pk,
        etag="e" * 64,
        status=304,
        now=timezone.now() - timedelta(minutes=3, seconds=5),
    )
    checker = factories.user("checker-e2e", groups=(roles.REVIEWERS,))
    v2 = services.version_approve(
        confirm_weak_evidence=True,
        version=Version.objects.get(pk=qs.versions.get(number=2).pk),
        reviewer=checker,
        label="staging",
    )
    services.export_fetch_record(
        token_id=token.pk,
        set_id=qs.pk,
        label="staging",
        version_id=v2.pk,
        etag="f" * 64,
        status=200,
    )
    services.label_move(question_set=qs, name="production", version=v2, actor=checker)
    sign_in_user(page, live_server.url, factories.author("reader-e2e"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/sets/s/")
        labels = page.locator(".label-fetches")
        expect(labels).to_contain_text("fetched 3 minutes ago by runtime-prod-eu-west-1 (v1)")
        expect(labels).to_contain_text("fetched just now by runtime-prod-eu-west-1 (v2)")
        expect(page.locator(".label-unfetched")).to_contain_text(
            "Moved to v2 just now and nothing has fetched it since"
        )
        page.screenshot(path=SHOTS / f"set-fetches-{width}.png", full_page=True)
        assert overflow(page) == 0, width


def surer_when_new(body):
    """m-new keeps every decision but is surer that an urgent state is urgent (0.8 → 0.95)."""
    out = reads_the_words(body)
    if body["state"].get("urgent") and body.get("model") == "m-new":
        out["answers"]["urgent"]["noul"] = 0.95
    return out


def test_a_drift_run_shows_its_shifts(page, live_server, settings):
    provider = Provider(surer_when_new)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-e2e", provider.url
    try:
        writer = factories.author("drift-author")
        qs = factories.question_set("drifting", owner=writer, doc=DOC)
        for i, (option, topic) in enumerate([*TOPICS.items(), ("billing", "money")]):
            services.sample_state_create(
                question_set=qs,
                name=f"state-{i}",
                state={"topic": topic, "urgent": i % 2 == 0},
                author=writer,
                expected={"desk": option, "urgent": i % 2 == 0},
            )
        version = services.version_submit(version=services.open_draft(qs), author=writer)
        version = services.version_approve(
            confirm_weak_evidence=True,
            version=version,
            reviewer=factories.reviewer(),
            label="production",
        )
        base = services.batch_create(
            version=version, backend="typesafe", user=writer, model="m-old", enqueue=False
        )
        services.batch_execute(base.pk)
        run = control_services.drift_create(
            version=version, model="m-new", user=writer, enqueue=False
        )
        services.batch_execute(run.pk)
    finally:
        provider.stop()
    sign_in_user(page, live_server.url, writer)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        section = page.locator("section[aria-labelledby=drift-heading]")
        expect(section).to_contain_text("2 shifted (25%)")
        expect(section).to_contain_text("state-0 0.80 → 0.95, state-2 0.80 → 0.95")
        expect(section).to_contain_text(f"else {controls.SHIFT_NOISE_FLOOR:.2f}")
        section.screenshot(path=SHOTS / f"drift-shifts-{width}.png")
        assert overflow(page) == 0, width
