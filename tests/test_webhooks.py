"""Change webhooks against a receiver on loopback: an approval and every label move become a
signed POST per endpoint, sent by django-tasks' database worker after the commit, retried with
backoff up to the bound, each attempt logged; the signature verifies with the endpoint's secret,
which is shown once and never again."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.test import Client
from django.urls import reverse

from questions import roles, services, webhooks
from questions.models import Version, Webhook, WebhookDelivery
from tests import factories
from tests.helpers import finished, work
from tests.providers import Receiver, run_cli

pytestmark = pytest.mark.django_db(transaction=True)  # enqueued on commit; the worker's own


@pytest.fixture
def receiver():
    made = []

    def make(**kw):
        r = Receiver(**kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.stop()


@pytest.fixture(autouse=True)
def quick(settings):
    settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS = 0.05
    settings.DECISIONS_WEBHOOK_BACKOFF_CAP_SECONDS = 0.2
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 1
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 4
    settings.CONSOLE_PUBLIC_URL = "https://console.example"


def in_review():
    """A set `s` whose v1 is in review, written by `writer`; `checker` reviews."""
    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    return qs, version, checker


def attempts_of(delivery: WebhookDelivery) -> list:
    return [a.status_code or a.error for a in delivery.attempt_log.order_by("number")]


# --- the pure parts ------------------------------------------------------------------------------


def test_the_signature_is_the_hmac_sha256_of_the_body():
    import hashlib
    import hmac

    raw = b'{"event":"test"}'
    expected = "sha256=" + hmac.new(b"whsec_x", raw, hashlib.sha256).hexdigest()
    assert webhooks.signature("whsec_x", raw) == expected
    assert webhooks.verify("whsec_x", raw, expected)
    assert not webhooks.verify("whsec_y", raw, expected)
    assert not webhooks.verify("whsec_x", raw + b" ", expected)
    assert not webhooks.verify("whsec_x", raw, None)


def test_the_backoff_doubles_up_to_its_cap():
    assert [webhooks.backoff(n, 2, 10) for n in (1, 2, 3, 4, 5)] == [2, 4, 8, 10, 10]


# --- events, signed and sent by the worker --------------------------------------------------------


def test_an_approval_with_a_label_sends_two_signed_events_through_the_worker(receiver):
    r = receiver()
    qs, version, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker, label="production")
    assert WebhookDelivery.objects.count() == 2
    work(finished)
    assert len(r.requests) == 2
    events = {}
    for request in r.requests:
        headers, raw = request["headers"], request["raw"]
        assert webhooks.verify(secret, raw, headers[webhooks.SIGNATURE_HEADER])
        body = json.loads(raw)
        assert headers[webhooks.EVENT_HEADER] == body["event"]
        assert headers[webhooks.DELIVERY_HEADER] == body["delivery"]
        events[body["event"]] = body
    assert set(events) == {"version.approved", "label.moved"}
    moved = events["label.moved"]
    assert moved["set"] == "s" and moved["version"] == 1 and moved["label"] == "production"
    assert moved["previous_version"] is None
    assert moved["sha256"] == Version.objects.get(pk=version.pk).sha256
    assert moved["export_url"] == "https://console.example/api/sets/s/export.json?label=production"
    assert events["version.approved"]["label"] == "production"
    for delivery in WebhookDelivery.objects.all():
        assert delivery.status == "delivered" and attempts_of(delivery) == [200]
    assert hook.deliveries.count() == 2


def test_every_label_move_is_sent_with_the_version_it_left(receiver):
    r = receiver()
    qs, version, checker = in_review()
    services.version_approve(version=version, reviewer=checker, label="production")
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    writer = factories.user("w2", groups=(roles.AUTHORS,))
    v2 = services.version_draft_from(version=version, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)
    services.version_approve(version=v2, reviewer=checker)
    code, _, err = run_cli(
        "label", "--set", "s", "--label", "production", "--version", "2", "--user", "checker"
    )
    assert code == 0, err
    code, _, err = run_cli(  # a rollback is a move too
        "label", "--set", "s", "--label", "production", "--version", "1", "--user", "checker"
    )
    assert code == 0, err
    work(finished)
    bodies = [json.loads(x["raw"]) for x in r.requests]
    moves = sorted(
        ((b["version"], b["previous_version"]) for b in bodies if b["event"] == "label.moved"),
    )
    assert moves == [(1, 2), (2, 1)]
    assert [b["version"] for b in bodies if b["event"] == "version.approved"] == [2]


def test_a_refused_approval_sends_nothing(receiver):
    r = receiver()
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    with pytest.raises(services.NotAllowed):
        services.version_approve(version=version, reviewer=Version.objects.get().author)
    assert not WebhookDelivery.objects.exists()


# --- retries, bounded, every attempt logged -------------------------------------------------------


def test_a_failing_endpoint_is_retried_with_backoff_until_it_answers(receiver):
    r = receiver(statuses=[500, 503])
    qs, version, checker = in_review()
    _, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    started = time.monotonic()
    services.version_approve(version=version, reviewer=checker)
    work(finished)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "delivered" and delivery.attempts == 3
    assert attempts_of(delivery) == [500, 503, 200]
    assert len(r.requests) == 3
    # one delivery: the same bytes, id and signature on every attempt
    assert len({x["raw"] for x in r.requests}) == 1
    assert len({x["headers"][webhooks.DELIVERY_HEADER] for x in r.requests}) == 1
    assert all(
        webhooks.verify(secret, x["raw"], x["headers"][webhooks.SIGNATURE_HEADER])
        for x in r.requests
    )
    assert time.monotonic() - started >= 0.05 + 0.1  # the two backoffs were waited out


def test_the_attempts_are_bounded_and_the_delivery_ends_failed(receiver, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 3
    r = receiver(statuses=[503] * 10)
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker)
    work(finished)
    time.sleep(0.3)  # nothing further is queued
    work(finished)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and attempts_of(delivery) == [503, 503, 503]
    assert len(r.requests) == 3 and delivery.finished_at is not None


def test_a_slow_or_unreachable_endpoint_is_an_attempt_that_says_why(receiver, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 0.2
    slow = receiver(delay=1)
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=slow.url, user=checker)
    services.webhook_create(question_set=qs, url="http://127.0.0.1:9/hooks", user=checker)
    services.version_approve(version=version, reviewer=checker)
    work(finished)
    errors = sorted(attempts_of(d)[0] for d in WebhookDelivery.objects.all())
    assert errors[0].startswith("no answer within 0.2 s")
    assert errors[1].startswith("unreachable")


def test_two_workers_never_make_the_same_attempt(receiver):
    r = receiver()
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker)
    delivery = WebhookDelivery.objects.get()
    assert services.webhook_deliver(delivery.pk) is None  # delivered
    assert services.webhook_deliver(delivery.pk) is None  # nothing left to do
    assert len(r.requests) == 1 and delivery.attempt_log.count() == 1


# --- the secret -----------------------------------------------------------------------------------


def test_the_secret_never_reaches_the_log_even_when_the_endpoint_echoes_it(receiver, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    r = receiver(statuses=[400])
    qs, _, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    r.body = json.dumps({"error": f"bad signature for {secret}"}).encode()
    services.webhook_send_test(webhook=hook, user=checker)
    work(finished)
    attempt = WebhookDelivery.objects.get().attempt_log.get()
    assert attempt.status_code == 400 and "bad signature" in attempt.response_excerpt
    assert secret not in attempt.response_excerpt
    client = Client()
    client.force_login(checker)
    page = client.get(reverse("set-webhooks", args=["s"])).content.decode()
    assert "bad signature" in page and secret not in page


# --- configuring endpoints ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://example.com/x", "not an http(s) URL"),
        ("not a url", "not an http(s) URL"),
        ("https://example.com/" + "a" * 500, "at most 500"),
        ("https://example.com/\x00", "NUL"),
    ],
)
def test_a_bad_url_is_refused_and_nothing_is_made(url, words):
    qs = factories.question_set("s")
    with pytest.raises(services.Invalid, match=re.escape(words)):
        services.webhook_create(question_set=qs, url=url, user=factories.reviewer())
    assert not Webhook.objects.exists()


def test_only_reviewers_configure_webhooks():
    qs = factories.question_set("s")
    author = factories.author()
    with pytest.raises(services.NotAllowed):
        services.webhook_create(question_set=qs, url="https://example.com/h", user=author)
    client = Client()
    client.force_login(author)
    assert client.get(reverse("set-webhooks", args=["s"])).status_code == 403


def test_the_page_adds_an_endpoint_shows_its_secret_once_and_sends_a_test(receiver):
    r = receiver()
    qs = factories.question_set("s")
    checker = factories.reviewer("checker")
    client = Client()
    client.force_login(checker)
    url = reverse("set-webhooks", args=["s"])
    response = client.post(url, {"url": r.url, "description": "runtime"})
    assert response.status_code == 200
    hook = Webhook.objects.get()
    assert hook.secret in response.content.decode()
    assert hook.secret not in client.get(url).content.decode()  # shown once
    response = client.post(reverse("webhook-test", args=["s", hook.pk]))
    assert response.status_code == 302
    work(finished)
    body = json.loads(r.requests[0]["raw"])
    assert body["event"] == "test" and body["set"] == "s" and body["version"] == 1
    assert webhooks.verify(
        hook.secret, r.requests[0]["raw"], r.requests[0]["headers"][webhooks.SIGNATURE_HEADER]
    )
    page = client.get(url).content.decode()
    assert "delivered" in page and "test" in page
    bad = client.post(url, {"url": "javascript:alert(1)"})
    assert bad.status_code == 422 and "not an http(s) URL" in bad.content.decode()
    assert Webhook.objects.count() == 1
    assert client.post(reverse("webhook-delete", args=["s", hook.pk])).status_code == 302
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()
    assert qs.webhooks.count() == 0


# --- a worker that dies, a task queued twice ------------------------------------------------------


def test_a_delivery_whose_task_died_with_its_worker_is_queued_again(receiver, settings):
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    settings.DECISIONS_BATCH_STALE_SECONDS = 1
    r = receiver()
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker)
    DBTaskResult.objects.all().delete()  # the worker that held its task died with it
    delivery = WebhookDelivery.objects.get()
    assert services.webhook_sweep_overdue() == []  # not overdue yet
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=5)
    )
    queued: dict[int, float] = {}
    assert services.webhook_sweep_overdue(queued) == [delivery.pk]
    assert services.webhook_sweep_overdue(queued) == []  # once per window
    work(finished)
    assert len(r.requests) == 1
    assert WebhookDelivery.objects.get().status == "delivered"


def test_two_tasks_of_one_delivery_make_one_attempt_at_a_time(receiver, settings):
    settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS = 0.4
    settings.DECISIONS_WEBHOOK_BACKOFF_CAP_SECONDS = 1
    r = receiver(statuses=[500])
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker)
    delivery = WebhookDelivery.objects.get()
    services.webhook_deliver_task.enqueue(delivery.pk)  # a second task of the same delivery
    services.webhook_deliver_task.enqueue(delivery.pk)  # and a third
    work(finished)
    delivery = WebhookDelivery.objects.get()
    assert attempts_of(delivery) == [500, 200]
    assert len(r.requests) == 2
    first, second = delivery.attempt_log.order_by("number")
    # the extra tasks neither doubled an attempt nor cut the backoff short
    assert (second.created_at - first.created_at).total_seconds() >= 0.4
