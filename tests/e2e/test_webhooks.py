"""In a real browser: a reviewer adds a webhook, copies its secret, sends a test event that the
task worker delivers to a receiver on loopback, and reads the delivery log — at a laptop's
width and at a phone's, with nothing wider than the screen."""

import json
import re

import pytest
from playwright.sync_api import expect

from questions import roles
from questions.engine import webhooks
from questions.models import Webhook
from tests import factories
from tests.e2e.conftest import SHOTS, overflow
from tests.providers import Receiver, work
from tests.providers import webhooks_finished as finished

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def receiver(settings):
    settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS = 0.05
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 3
    r = Receiver(statuses=[503])
    yield r
    r.stop()


def test_add_a_webhook_send_a_test_event_and_read_the_log(page, sign_in, receiver):
    factories.user("reviewer", groups=(roles.REVIEWERS,), password="pw-for-browser-tests")
    factories.question_set("gestures")
    url = sign_in("reviewer")
    page.goto(f"{url}/sets/gestures/")
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL").fill(receiver.url)
    page.get_by_label("Description").fill("production runtime")
    page.get_by_role("button", name="Add webhook").click()
    secret = page.locator(".webhook-secret code.token").inner_text()
    assert secret == Webhook.objects.get().secret
    page.get_by_role("button", name="Send test event").click()
    expect(page.get_by_text("A test event is queued")).to_be_visible()
    work(finished)
    page.reload()
    log = page.locator(".webhook-log")
    expect(log.locator(".delivery-status")).to_have_text("delivered")
    expect(log.locator("ol.attempts li")).to_have_count(2)  # 503, then 200
    expect(log.locator("ol.attempts li").first).to_contain_text(re.compile(r"^503 in \d+ ms"))
    expect(log.locator("ol.attempts li").last).to_contain_text(re.compile(r"^200 in \d+ ms"))
    assert secret not in page.content()
    raw = receiver.requests[-1]["raw"]
    assert json.loads(raw)["event"] == "test"
    assert webhooks.verify(secret, raw, receiver.requests[-1]["headers"][webhooks.SIGNATURE_HEADER])
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"wider than {width} px"
        page.screenshot(path=SHOTS / f"webhooks-{width}.png", full_page=True)
