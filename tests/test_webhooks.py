"""Change webhooks against receivers on loopback: an approval and every label move become a
signed POST per endpoint, sent by django-tasks' database worker after the commit, retried with
backoff up to the bound, each attempt logged with its status and time (never the answer); every
attempt's signature covers a fresh timestamp and the body and verifies with the endpoint's
secret, which is shown once and never again. Where a webhook may go is checked at save and at
every send (a refused address is never connected to), an attempt has a total deadline, two
workers never overlap an attempt, and deliveries have a queue of their own."""

from __future__ import annotations

import json
import re
import ssl
import threading
import time

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from questions import roles, services
from questions.engine import webhooks
from questions.models import BatchRun, Version, Webhook, WebhookDelivery
from questions.services import webhooks as webhook_service
from tests import factories
from tests.providers import (
    Listener,
    Receiver,
    certificate,
    resolving,
    run_cli,
    webhooks_finished,
    work,
    worker,
)

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


@pytest.fixture
def listener():
    made = []

    def make(**kw):
        x = Listener(**kw)
        made.append(x)
        return x

    yield make
    for x in made:
        x.stop()


@pytest.fixture(autouse=True)
def quick(settings):
    settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS = 0.05
    settings.DECISIONS_WEBHOOK_BACKOFF_CAP_SECONDS = 0.2
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 1
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 4
    settings.CONSOLE_PUBLIC_URL = "https://console.example"


def finished() -> bool:
    return webhooks_finished()


def in_review():
    """A set `s` whose v1 is in review, written by `writer`; `checker` reviews."""
    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    return qs, version, checker


def attempts_of(delivery: WebhookDelivery) -> list:
    return [a.status_code or a.error for a in delivery.attempt_log.order_by("number")]


# --- the pure parts ------------------------------------------------------------------------------


def test_the_signature_is_the_hmac_sha256_of_the_timestamp_and_the_body():
    import hashlib
    import hmac

    raw = b'{"event":"test"}'
    t = 1_760_000_000
    v1 = hmac.new(b"whsec_x", b"1760000000." + raw, hashlib.sha256).hexdigest()
    header = webhooks.headers("whsec_x", raw, "test", "d-1", timestamp=t)[webhooks.SIGNATURE_HEADER]
    assert header == f"t={t},v1={v1}"
    assert webhooks.verify("whsec_x", raw, header, now=t)
    assert webhooks.verify("whsec_x", raw, header, now=t + webhooks.TOLERANCE_SECONDS)
    assert webhooks.verify("whsec_x", raw, header, now=t - webhooks.TOLERANCE_SECONDS)
    # a replay later than the tolerance, another secret, another body, another time: refused
    assert not webhooks.verify("whsec_x", raw, header, now=t + webhooks.TOLERANCE_SECONDS + 1)
    assert not webhooks.verify("whsec_y", raw, header, now=t)
    assert not webhooks.verify("whsec_x", raw + b" ", header, now=t)
    assert not webhooks.verify("whsec_x", raw, header.replace(f"t={t}", f"t={t + 1}"), now=t)
    assert not webhooks.verify("whsec_x", raw, f"v1={v1}", now=t)  # no timestamp
    assert not webhooks.verify("whsec_x", raw, None, now=t)
    # a header with several v1 values (a rotated secret) verifies with either
    assert webhooks.verify("whsec_x", raw, f"t={t},v1={'0' * 64},v1={v1}", now=t)


def test_the_docs_receiver_check_verifies_a_real_delivery_and_refuses_a_replay(receiver):
    """The few lines the docs give a receiver, run against what the worker sent."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "integrating.md").read_text()
    snippet = re.search(r"```python\n(# a receiver's check.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(snippet, namespace)  # the docs' own code
    r = receiver()
    qs, _, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.webhook_send_test(webhook=hook, user=checker)
    work(finished)
    sent = r.requests[0]
    header = sent["headers"][webhooks.SIGNATURE_HEADER]
    assert namespace["verify"](secret.encode(), sent["raw"], header)
    assert not namespace["verify"](b"whsec_other", sent["raw"], header)
    t = int(header.split(",")[0].removeprefix("t="))
    old = header.replace(f"t={t}", f"t={t - 301}")
    assert not namespace["verify"](secret.encode(), sent["raw"], old)


def test_the_backoff_doubles_up_to_its_cap():
    assert [webhooks.backoff(n, 2, 10) for n in (1, 2, 3, 4, 5)] == [2, 4, 8, 10, 10]


# --- events, signed and sent by the worker --------------------------------------------------------


def test_an_approval_with_a_label_sends_two_signed_events_through_the_worker(receiver):
    r = receiver()
    qs, version, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    assert WebhookDelivery.objects.count() == 2
    work(finished)
    assert len(r.requests) == 2
    events = {}
    for request in r.requests:
        headers, raw = request["headers"], request["raw"]
        assert webhooks.verify(secret, raw, headers[webhooks.SIGNATURE_HEADER])
        assert headers["Host"] == f"127.0.0.1:{r.port}"
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
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    writer = factories.user("w2", groups=(roles.AUTHORS,))
    v2 = services.version_draft_from(version=version, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)
    services.version_approve(confirm_weak_evidence=True, version=v2, reviewer=checker)
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
        services.version_approve(
            confirm_weak_evidence=True, version=version, reviewer=Version.objects.get().author
        )
    assert not WebhookDelivery.objects.exists()


# --- retries, bounded, every attempt logged -------------------------------------------------------


def test_a_failing_endpoint_is_retried_with_backoff_until_it_answers(receiver):
    r = receiver(statuses=[500, 503])
    qs, version, checker = in_review()
    _, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    started = time.monotonic()
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
    work(finished)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "delivered" and delivery.attempts == 3
    assert attempts_of(delivery) == [500, 503, 200]
    assert len(r.requests) == 3
    # one delivery: the same bytes and id on every attempt, each signed when it was made
    assert len({x["raw"] for x in r.requests}) == 1
    assert len({x["headers"][webhooks.DELIVERY_HEADER] for x in r.requests}) == 1
    assert all(
        webhooks.verify(secret, x["raw"], x["headers"][webhooks.SIGNATURE_HEADER])
        for x in r.requests
    )
    assert time.monotonic() - started >= 0.05 + 0.1  # the two backoffs were waited out


def test_every_attempt_carries_its_own_fresh_timestamp(receiver, settings, monkeypatch):
    """A retry is signed at the time it is made, so a receiver's freshness window never
    refuses a legitimate retry however long the backoff was."""
    clock = iter([1_800_000_000, 1_800_003_600, 1_800_007_200])
    monkeypatch.setattr(webhooks, "clock", lambda: next(clock))
    r = receiver(statuses=[500, 502])
    qs, version, checker = in_review()
    _, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(version=version, reviewer=checker, confirm_weak_evidence=True)
    delivery = WebhookDelivery.objects.get()
    while services.webhook_deliver(delivery.pk) is not None:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None)
    signed = [x["headers"][webhooks.SIGNATURE_HEADER] for x in r.requests]
    assert [h.split(",")[0] for h in signed] == [
        "t=1800000000",
        "t=1800003600",
        "t=1800007200",
    ]
    for header, now in zip(signed, (1_800_000_000, 1_800_003_600, 1_800_007_200), strict=True):
        assert webhooks.verify(secret, r.requests[0]["raw"], header, now=now)
    assert not webhooks.verify(secret, r.requests[0]["raw"], signed[0], now=1_800_007_200)


def test_the_attempts_are_bounded_and_the_delivery_ends_failed(receiver, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 3
    r = receiver(statuses=[503] * 10)
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
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
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
    work(finished)
    errors = sorted(attempts_of(d)[0] for d in WebhookDelivery.objects.all())
    assert errors[0].startswith("no answer within 0.2 s")
    assert errors[1].startswith("unreachable")


def test_two_workers_never_make_the_same_attempt(receiver):
    r = receiver()
    qs, version, checker = in_review()
    services.webhook_create(question_set=qs, url=r.url, user=checker)
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
    delivery = WebhookDelivery.objects.get()
    assert services.webhook_deliver(delivery.pk) is None  # delivered
    assert services.webhook_deliver(delivery.pk) is None  # nothing left to do
    assert len(r.requests) == 1 and delivery.attempt_log.count() == 1


# --- what is kept of an answer ------------------------------------------------------------------


def test_only_the_status_and_time_of_an_answer_are_kept_never_its_body(receiver, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    r = receiver(statuses=[403])
    qs, _, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=r.url, user=checker)
    r.body = f"<!DOCTYPE html><html>internal admin · bad signature for {secret}".encode()
    services.webhook_send_test(webhook=hook, user=checker)
    work(finished)
    attempt = WebhookDelivery.objects.get().attempt_log.get()
    assert attempt.status_code == 403 and attempt.error == "" and attempt.duration_ms > 0
    assert not hasattr(attempt, "response_excerpt")
    client = Client()
    client.force_login(checker)
    page = client.get(reverse("set-webhooks", args=["s"])).content.decode()
    assert re.search(r"<strong>403</strong> in \d+ ms", page)
    assert "internal admin" not in page and "DOCTYPE html><html>" not in page
    assert secret not in page


# --- configuring endpoints ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://example.com/x", "not an http(s) URL"),
        ("not-a-url", "not an http(s) URL"),
        ("https://example.com/" + "a" * 500, "at most 500"),
        ("https://example.com/\x00", "NUL"),
        ("http://user:pass@example.com/", "user name or password"),
        ("http://example.com/\r\nX-Injected: 1", "a line break"),
        ("http://127.0.0.1:8124/%0d%0aX-Injected:1", "%0d"),
        ("http://0x7f000001/", "write it as 127.0.0.1"),
    ],
)
def test_a_bad_url_is_refused_and_nothing_is_made(url, words):
    qs = factories.question_set("s")
    with pytest.raises(services.Invalid, match=re.escape(words)):
        services.webhook_create(question_set=qs, url=url, user=factories.reviewer())
    assert not Webhook.objects.exists()


PUBLIC_ONLY = "webhooks reach only public addresses unless DECISIONS__WEBHOOK_ALLOW_PRIVATE=1"
NEVER = "whatever DECISIONS__WEBHOOK_ALLOW_PRIVATE says"
REVIEW_PROBES = [  # every URL the review saw accepted (F17), and what each now gets
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", NEVER),
    ("http://[fd00:ec2::254]/latest/", NEVER),
    ("http://metadata.google.internal/computeMetadata/v1/", NEVER),
    ("http://10.0.0.1/", PUBLIC_ONLY),
    ("http://192.168.1.1/", PUBLIC_ONLY),
    ("http://127.0.0.1:5432/", PUBLIC_ONLY),
    ("http://localhost:8122/", PUBLIC_ONLY),
    ("http://[::1]:8124/", PUBLIC_ONLY),
    ("http://0.0.0.0:8124/", NEVER),
    ("http://user:pass@127.0.0.1:8124/", "user name or password"),
    ("http://127.0.0.1:8124/%0d%0aX-Injected:1", "%0d"),
    ("http://[::ffff:127.0.0.1]:8124/", PUBLIC_ONLY),
]


@pytest.mark.parametrize(("url", "words"), REVIEW_PROBES)
def test_by_default_no_internal_address_is_accepted(url, words):
    qs = factories.question_set("s")
    with (
        override_settings(DECISIONS_WEBHOOK_ALLOW_PRIVATE=False),
        pytest.raises(services.Invalid, match=re.escape(words)),
    ):
        services.webhook_create(question_set=qs, url=url, user=factories.reviewer())
    assert not Webhook.objects.exists()


def test_allow_private_lets_loopback_and_private_networks_through_but_never_metadata():
    qs, checker = factories.question_set("s"), factories.reviewer()
    with override_settings(DECISIONS_WEBHOOK_ALLOW_PRIVATE=True):
        for url in ("http://10.0.0.1/", "http://127.0.0.1:8124/", "http://[::1]:8124/"):
            services.webhook_create(question_set=qs, url=url, user=checker)
        for url, words in REVIEW_PROBES:
            if words == NEVER:
                with pytest.raises(services.Invalid, match=re.escape(NEVER)):
                    services.webhook_create(question_set=qs, url=url, user=checker)
    assert Webhook.objects.count() == 3


def test_a_name_is_checked_by_what_it_resolves_to_at_save():
    qs, checker = factories.question_set("s"), factories.reviewer()
    table = {
        "hooks.corp.test": ["93.184.216.34", "10.0.0.1"],
        "hooks.public.test": ["93.184.216.34"],
    }
    with override_settings(DECISIONS_WEBHOOK_ALLOW_PRIVATE=False), resolving(table):
        with pytest.raises(services.Invalid) as caught:
            services.webhook_create(question_set=qs, url="https://hooks.corp.test/h", user=checker)
        assert (
            str(caught.value)
            == f"hooks.corp.test resolves to 10.0.0.1, a private address; {PUBLIC_ONLY}."
        )
        services.webhook_create(question_set=qs, url="https://hooks.public.test/h", user=checker)
        # a name that does not resolve yet is accepted; every attempt checks it again
        services.webhook_create(question_set=qs, url="https://not-yet.test/h", user=checker)
    assert sorted(Webhook.objects.values_list("url", flat=True)) == [
        "https://hooks.public.test/h",
        "https://not-yet.test/h",
    ]


# --- where an attempt goes: checked again at send, pinned to the address checked ----------------


def _endpoint(url: str):
    """An endpoint saved with private addresses allowed (as the suite runs), and its set's
    reviewer."""
    qs, _, checker = in_review()
    hook, secret = services.webhook_create(question_set=qs, url=url, user=checker)
    return hook, secret, checker


def test_a_refused_address_is_never_connected_to(listener):
    spy = listener()
    hook, _, checker = _endpoint(spy.url)
    with override_settings(DECISIONS_WEBHOOK_ALLOW_PRIVATE=False):
        services.webhook_send_test(webhook=hook, user=checker)
        work(finished)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1  # a refusal is not retried
    assert attempts_of(delivery) == [f"refused: 127.0.0.1 is a loopback address; {PUBLIC_ONLY}."]
    assert spy.connections == []


def test_a_name_that_resolves_to_a_refused_address_at_send_is_refused_at_send(listener):
    """DNS rebinding: public when saved, loopback when sent. Nothing connects."""
    spy = listener()
    url = f"http://rebind.test:{spy.port}/hooks"
    with override_settings(DECISIONS_WEBHOOK_ALLOW_PRIVATE=False):
        with resolving({"rebind.test": ["93.184.216.34"]}):
            hook, _, checker = _endpoint(url)
        with resolving({"rebind.test": ["93.184.216.34", "127.0.0.1"]}) as calls:
            services.webhook_send_test(webhook=hook, user=checker)
            work(finished)
    assert calls == ["rebind.test"]
    assert attempts_of(WebhookDelivery.objects.get()) == [
        f"refused: rebind.test resolves to 127.0.0.1, a loopback address; {PUBLIC_ONLY}."
    ]
    assert spy.connections == []


def test_an_attempt_connects_to_the_address_checked_and_keeps_the_host_name(receiver):
    """The name is resolved once, by the console; the request still names it (Host)."""
    r = receiver()
    with resolving({"runtime.test": ["127.0.0.1"]}) as calls:
        hook, secret, checker = _endpoint(f"http://runtime.test:{r.port}/hooks")
        services.webhook_send_test(webhook=hook, user=checker)
        work(finished)
    assert calls == ["runtime.test", "runtime.test"]  # once at save, once for the attempt
    assert attempts_of(WebhookDelivery.objects.get()) == [200]
    assert r.requests[0]["headers"]["Host"] == f"runtime.test:{r.port}"
    assert webhooks.verify(
        secret, r.requests[0]["raw"], r.requests[0]["headers"][webhooks.SIGNATURE_HEADER]
    )


def test_over_https_the_pinned_connection_still_checks_the_certificate_for_the_name(
    tmp_path, monkeypatch, settings
):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    cert, key = certificate(tmp_path, "runtime.test")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    r = Receiver(tls=server)
    trusted = ssl.create_default_context(cafile=cert)
    monkeypatch.setattr(webhooks, "_tls", lambda: trusted)
    try:
        with resolving({"runtime.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}):
            good, _, checker = _endpoint(f"https://runtime.test:{r.port}/hooks")
            bad = services.webhook_create(
                question_set=good.question_set,
                url=f"https://other.test:{r.port}/hooks",
                user=checker,
            )[0]
            services.webhook_send_test(webhook=good, user=checker)
            services.webhook_send_test(webhook=bad, user=checker)
            work(finished)
    finally:
        r.stop()
    assert attempts_of(good.deliveries.get()) == [200]
    assert r.requests[0]["headers"]["Host"] == f"runtime.test:{r.port}"
    # the certificate names runtime.test, not other.test: verified against the name, refused
    assert attempts_of(bad.deliveries.get()) == ["unreachable (ConnectError)"]
    assert sorted(r.server_names) == ["other.test", "runtime.test"]  # SNI: the names


# --- a total deadline, a lease longer than it, and a queue of their own -------------------------


def test_a_receiver_that_trickles_its_answer_is_cut_at_the_deadline(listener, settings):
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 0.3
    slow = listener(trickle=400, every=0.05)  # a byte every 50 ms: no read ever waits 0.3 s
    hook, _, checker = _endpoint(slow.url)
    services.webhook_send_test(webhook=hook, user=checker)
    work(finished)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert attempts_of(delivery) == ["no answer within 0.3 s"]
    slow.wait_for(lambda x: x.open_now() == 0)  # the console hung up; the trickle was cut
    assert len(slow.connections) == 1 and slow.connections[0]["head"].startswith(b"POST /hooks")


def test_two_workers_never_overlap_an_attempt(listener, settings, monkeypatch):
    """A trickling receiver, an attempt in flight, and a second worker sweeping and delivering
    the whole time: the lease outlasts the attempt's deadline, so the second worker never
    starts an attempt while one is open."""
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 3
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 0.3
    settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS = 0.3
    settings.DECISIONS_BATCH_STALE_SECONDS = 0.2
    # a margin far above any stall of a busy machine, and an answer that outlasts it: without a
    # total deadline the lease would run out mid-attempt and the second worker would overlap
    monkeypatch.setattr(webhook_service, "LEASE_MARGIN_SECONDS", 10.0)
    slow = listener(trickle=600, every=0.05)  # 30 s of answer, were it not cut
    hook, _, checker = _endpoint(slow.url)
    services.webhook_send_test(webhook=hook, user=checker)
    delivery = WebhookDelivery.objects.get()
    first = threading.Thread(target=services.webhook_deliver, args=(delivery.pk,))
    first.start()
    slow.wait_for(lambda x: len(x.connections) == 1)
    queued: dict[int, float] = {}
    while not finished():  # the second worker: sweeps and tries, as an idle db_worker does
        services.webhook_sweep_overdue(queued)
        services.webhook_deliver(delivery.pk)
        time.sleep(0.02)
    first.join()
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 3
    assert attempts_of(delivery) == ["no answer within 0.3 s"] * 3
    assert len(slow.connections) == 3 and slow.most_open == 1


def test_a_batch_run_is_claimed_while_a_delivery_is_stuck(listener, settings):
    """Deliveries have their own queue and worker: a receiver holding one does not hold the
    worker batch runs wait for."""
    settings.DECISIONS_WEBHOOK_ATTEMPTS = 1
    settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS = 120  # stuck for as long as the test needs
    stuck = listener(trickle=100, every=1.0)  # held until released (ends by itself in 100 s)
    hook, _, checker = _endpoint(stuck.url)
    services.webhook_send_test(webhook=hook, user=checker)  # queued first
    writer = factories.author("runner")
    qs = hook.question_set
    services.sample_state_create(question_set=qs, name="one", state={"n": 1}, author=writer)
    run = services.batch_create(
        version=Version.objects.get(question_set=qs), backend="recorded", user=writer
    )
    deliveries = threading.Thread(target=worker(["webhooks"], "webhook-worker").run)
    deliveries.start()
    stuck.wait_for(lambda x: x.open_now() == 1)  # the delivery worker is held
    worker(["default"], "batch-worker").run()  # the batch worker, as `db_worker` runs
    assert BatchRun.objects.get(pk=run.pk).finished
    assert stuck.open_now() == 1  # still held while the run was claimed and finished
    stuck.released.set()
    deliveries.join()
    assert WebhookDelivery.objects.get().status == "failed"


def test_webhook_tasks_go_to_their_own_queue():
    assert webhook_service.webhook_deliver_task.queue_name == "webhooks"
    assert services.batches.batch_run_task.queue_name == "default"


# --- who configures endpoints, and the page ------------------------------------------------------


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
    assert re.search(r"<strong>200</strong> in \d+ ms", page)
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
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
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
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
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
