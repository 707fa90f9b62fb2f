"""Change webhooks: the endpoints a reviewer configures per set, the events they are told of
(an approval, every label move, a test), and the delivery of each by the task worker.

An event becomes one `WebhookDelivery` per endpoint of the set, inside the transaction that
approved or moved, and is enqueued only once that commits. The worker makes one attempt per task
(`webhook_deliver`): a 2xx answer delivers it; anything else — another status, a timeout, an
unreachable endpoint — is logged as an attempt and, while attempts remain
(`DECISIONS__WEBHOOK_ATTEMPTS`), retried by a new task after a backoff that doubles from
`DECISIONS__WEBHOOK_BACKOFF_SECONDS` up to `DECISIONS__WEBHOOK_BACKOFF_CAP_SECONDS`. An attempt
is claimed by bumping the attempt count where it still has the value read, and leased by moving
its next attempt past the attempt's total deadline (`DECISIONS__WEBHOOK_TIMEOUT_SECONDS`) and a
margin, so two workers — or two tasks of one delivery — never make the same attempt, an
attempt in flight always ends before its lease does (it is never swept while it runs), and a
task that finds its delivery not yet due leaves it to the task that is. A delivery whose task
was lost with its worker is queued again by `webhook_sweep_overdue` (every idle `db_worker`
runs it). Deliveries run on their own queue (`settings.WEBHOOK_QUEUE`) and its own worker, so
they never hold a worker batch runs wait for.

Where a webhook may go is `questions.addresses`' policy, applied when the endpoint is saved and
again, after resolving the name, at every attempt (`webhooks.post`); an attempt the policy
refuses connects to nothing and ends the delivery. The secret signs every attempt and is shown
once, when the endpoint is made; it never reaches a page, a log line or the delivery log, and
neither does anything the receiver answers but its status.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django_tasks import task

from questions import roles
from questions.core import addresses
from questions.engine import webhooks
from questions.models import (
    QuestionSet,
    Version,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from questions.services.audit import audit_record
from questions.services.errors import Invalid, require, storable

log = logging.getLogger("questions.webhooks")

WEBHOOK_MANAGERS_ONLY = "Only reviewers and admins configure a set's webhooks."
#: an attempt in flight holds its delivery for its total deadline and this much more (the
#: attempt's bookkeeping), so its lease never runs out while it is in flight
LEASE_MARGIN_SECONDS = 30.0
#: how long saving an endpoint waits for its name to resolve, at most
SAVE_RESOLVE_SECONDS = 3.0


def webhook_create(
    *, question_set: QuestionSet, url: str, user: Any, description: str = ""
) -> tuple[Webhook, str]:
    """A new endpoint for the set; returns it and its secret, which is shown only now."""
    require(user, roles.may_manage_webhooks, WEBHOOK_MANAGERS_ONLY, on=question_set)
    url = storable((url or "").strip(), "The URL")
    description = storable((description or "").strip(), "The description")
    limit = Webhook._meta.get_field("url").max_length
    if len(url) > limit:
        raise Invalid(f"The URL has {len(url)} characters; at most {limit}.")
    check_url(url)
    if len(description) > 200:
        raise Invalid(f"The description has {len(description)} characters; at most 200.")
    secret = webhooks.new_secret()
    hook = Webhook.objects.create(
        question_set=question_set,
        url=url,
        description=description,
        secret=secret,
        created_by=roles.recorded_as(user),
    )
    audit_record(
        action="webhook.created",
        actor=user,
        obj=hook,
        question_set=question_set,
        detail={"url": url},
    )
    return hook, secret


def check_url(url: str) -> None:
    """Invalid unless a webhook may go to `url` (`questions.addresses`): its literal address,
    or every address its name resolves to now; a name that does not resolve (yet) passes, and
    is checked again at every attempt."""
    allow = settings.DECISIONS_WEBHOOK_ALLOW_PRIVATE
    try:
        target = addresses.parse(url)
        addresses.check_name(target, allow_private=allow)
        try:
            found = addresses.resolve(
                target, min(SAVE_RESOLVE_SECONDS, settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS)
            )
        except addresses.Unresolved:
            return
        addresses.check_addresses(target, found, allow_private=allow)
    except addresses.Refused as exc:
        raise Invalid(str(exc)) from None


def webhook_delete(*, webhook: Webhook, user: Any) -> None:
    """Remove an endpoint and its delivery log; nothing more is sent to it."""
    require(user, roles.may_manage_webhooks, WEBHOOK_MANAGERS_ONLY, on=webhook.question_set)
    audit_record(
        action="webhook.deleted",
        actor=user,
        obj=webhook,
        question_set=webhook.question_set,
        detail={"url": webhook.url},
    )
    webhook.delete()


def webhook_send_test(*, webhook: Webhook, user: Any) -> WebhookDelivery:
    """A `test` event to one endpoint, about the set's newest approved version (or its newest
    version), sent by the worker like any other."""
    require(user, roles.may_manage_webhooks, WEBHOOK_MANAGERS_ONLY, on=webhook.question_set)
    versions = webhook.question_set.versions.order_by("-number")
    version = versions.filter(status=Version.Status.APPROVED).first() or versions.first()
    with transaction.atomic():
        return _deliver_later(webhook, webhooks.TEST, version)


def webhook_event(
    event: str, *, version: Version, label: str | None = None, previous: int | None = None
) -> list[WebhookDelivery]:
    """Tell every endpoint of the version's set of `event`: called inside the transaction that
    approved or moved a label, so nothing is sent unless it commits."""
    return [
        _deliver_later(hook, event, version, label=label, previous=previous)
        for hook in version.question_set.webhooks.all()
    ]


def export_url(slug: str, *, label: str | None, number: int) -> str:
    """Where the runtime fetches what the event is about (by label when there is one)."""
    query = f"label={label}" if label else f"version={number}"
    return f"{settings.CONSOLE_PUBLIC_URL}{reverse('api-export', args=[slug])}?{query}"


def _deliver_later(
    hook: Webhook,
    event: str,
    version: Version | None,
    *,
    label: str | None = None,
    previous: int | None = None,
) -> WebhookDelivery:
    delivery_id = str(uuid.uuid4())
    slug = hook.question_set.slug
    raw = webhooks.body(
        event=event,
        delivery=delivery_id,
        question_set=slug,
        version=version.number if version else None,
        label=label,
        previous_version=previous,
        sha256=version.sha256 if version else None,
        export_url=export_url(slug, label=label, number=version.number) if version else None,
        created_at=timezone.now().isoformat(),
    )
    delivery = WebhookDelivery.objects.create(
        webhook=hook,
        event=event,
        delivery_id=delivery_id,
        body_text=raw.decode("utf-8"),
        next_attempt_at=timezone.now(),
    )
    transaction.on_commit(lambda: webhook_deliver_task.enqueue(delivery.pk))
    return delivery


def webhook_deliver(delivery_pk: int) -> float | None:
    """Make the next attempt of a pending delivery; the seconds until the one after it, or None
    when the delivery is finished (delivered, failed, gone, or another worker's attempt)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_pk).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return None
    if delivery.next_attempt_at and delivery.next_attempt_at > timezone.now():
        return None  # not due: the task queued for it, or the attempt in flight, has it
    number = delivery.attempts + 1
    lease = timedelta(seconds=settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS)
    claimed = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempts=delivery.attempts
    ).update(attempts=number, next_attempt_at=timezone.now() + lease)
    if not claimed:
        return None
    hook = delivery.webhook
    raw = delivery.body_text.encode("utf-8")
    result = webhooks.post(  # signed now: every attempt carries its own timestamp
        hook.url,
        raw,
        webhooks.headers(hook.secret, raw, delivery.event, delivery.delivery_id),
        settings.DECISIONS_WEBHOOK_TIMEOUT_SECONDS,
        allow_private=settings.DECISIONS_WEBHOOK_ALLOW_PRIVATE,
    )
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=number,
        status_code=result.status_code,
        error=result.error[:400],
        duration_ms=result.duration_ms,
    )
    log.info(
        "webhook delivery %s attempt %d: %s",
        delivery.delivery_id,
        number,
        result.status_code or result.error,
    )
    now = timezone.now()
    last = number >= max(1, settings.DECISIONS_WEBHOOK_ATTEMPTS)
    if result.ok or result.refused or last:
        status = WebhookDelivery.Status.DELIVERED if result.ok else WebhookDelivery.Status.FAILED
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=status, finished_at=now, next_attempt_at=None
        )
        return None
    wait = webhooks.backoff(
        number,
        settings.DECISIONS_WEBHOOK_BACKOFF_SECONDS,
        settings.DECISIONS_WEBHOOK_BACKOFF_CAP_SECONDS,
    )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=now + timedelta(seconds=wait)
    )
    return wait


def webhook_sweep_overdue(queued: dict[int, float] | None = None) -> list[int]:
    """Queue again every pending delivery overdue by more than DECISIONS__BATCH_STALE_SECONDS
    (its task was lost with a worker); the ids queued. `queued` (delivery id → when) remembers
    what this caller queued, so a delivery that merely waits for a free worker is queued again
    once per window, not on every sweep; a second task of a delivery makes no second attempt."""
    queued = {} if queued is None else queued
    window = settings.DECISIONS_BATCH_STALE_SECONDS
    now = time.monotonic()
    overdue = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING,
        next_attempt_at__lt=timezone.now() - timedelta(seconds=window),
    ).values_list("pk", flat=True)
    swept = []
    for pk in overdue:
        if now - queued.get(pk, -math.inf) < window:
            continue
        webhook_deliver_task.enqueue(pk)
        queued[pk] = now
        swept.append(pk)
    if swept:
        log.warning("webhook deliveries %s were overdue; queued again", swept)
    return swept


@task(queue_name=settings.WEBHOOK_QUEUE)
def webhook_deliver_task(delivery_pk: int) -> None:
    """One attempt of a delivery in a django-tasks worker; the next, if any, as a new task
    that waits out the backoff."""
    wait = webhook_deliver(delivery_pk)
    if wait is not None:
        later = timezone.now() + timedelta(seconds=wait)
        webhook_deliver_task.using(run_after=later).enqueue(delivery_pk)
