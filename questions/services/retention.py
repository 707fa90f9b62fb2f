"""How long production states are kept: a set's unlabelled production states older than its
retention are deleted (`production_purge`) — by every task worker about once an hour
(`production_purge_due`, from `db_worker`'s sweep) and by hand (`questions states-purge`).

A state is kept, whatever its age, when it is labelled (an expected answer, a label of its own
or a reviewer's settlement: someone's work), or when a run (an attribution's too) asked about it (a
run's record points at the exact state it asked). Manual states are never purged."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from questions import roles
from questions.models import (
    BatchItem,
    IngestSettings,
    LabelSettlement,
    QuestionSet,
    SampleState,
    StateLabel,
)
from questions.services.audit import audit_record
from questions.services.errors import Invalid, require

log = logging.getLogger("questions.ingest")

PURGE_ONLY = "Only reviewers and staff delete a set's production states."
#: how often each worker purges every set's old production states
PURGE_EVERY_SECONDS = 3600.0
#: states deleted a statement
PURGE_CHUNK = 1000


@dataclass(frozen=True)
class Purged:
    """What a purge did: the production states older than the cut-off it deleted, and those it
    kept because they are labelled or a run asked about them."""

    deleted: int
    kept_labelled: int
    kept_in_runs: int

    def as_json(self) -> dict[str, int]:
        return asdict(self)


def _old(question_set: QuestionSet, before: datetime) -> QuerySet[SampleState]:
    return SampleState.objects.filter(
        question_set=question_set,
        source=SampleState.Source.PRODUCTION,
        observed_at__lt=before,
    )


def _labelled(states: QuerySet[SampleState]) -> QuerySet[SampleState]:
    return states.filter(
        ~Q(expected={})
        | Exists(StateLabel.objects.filter(sample_state=OuterRef("pk"), current=True))
        | Exists(LabelSettlement.objects.filter(sample_state=OuterRef("pk")))
    )


def _asked(states: QuerySet[SampleState]) -> QuerySet[SampleState]:
    return states.filter(
        Exists(BatchItem.objects.filter(sample_state__sample_state=OuterRef("pk")))
    )


def production_purge(
    *,
    question_set: QuestionSet,
    user: Any,
    older_than: timedelta | None = None,
    now: datetime | None = None,
) -> Purged:
    """Delete `question_set`'s production states that production answered more than
    `older_than` ago (the set's retention when None) and that nobody labelled and no run
    asked about; in chunks, so a large purge holds no lock for long."""
    require(user, roles.may_review, PURGE_ONLY, on=question_set)
    if older_than is None:
        older_than = timedelta(days=IngestSettings.of(question_set).retention_days)
    if older_than < timedelta(0):
        raise Invalid("The age to purge from cannot be negative.", code="older_than")
    before = (now or timezone.now()) - older_than
    old = _old(question_set, before)
    labelled = _labelled(old).values("pk")
    asked = _asked(old).values("pk")
    doomed = old.exclude(pk__in=labelled).exclude(pk__in=asked)
    deleted = 0
    while True:
        with transaction.atomic():
            chunk = list(doomed.values_list("pk", flat=True)[:PURGE_CHUNK])
            if not chunk:
                break
            SampleState.objects.filter(pk__in=chunk).delete()
        deleted += len(chunk)
    remaining = _old(question_set, before)
    kept_labelled = _labelled(remaining).count()
    purged = Purged(
        deleted=deleted,
        kept_labelled=kept_labelled,
        kept_in_runs=remaining.count() - kept_labelled,
    )
    if deleted:
        audit_record(
            action="states.purged",
            actor=user,
            question_set=question_set,
            detail=purged.as_json(),
        )
        log.info(
            "purge set=%s deleted=%d",
            question_set.slug,
            deleted,
            extra={"set": question_set.slug, **purged.as_json()},
        )
    return purged


def production_purge_due(last: dict[str, float], *, clock=time.monotonic) -> int:
    """Purge every set that holds production states, when `PURGE_EVERY_SECONDS` have passed
    since this worker's last purge (`last` remembers it between calls); how many states were
    deleted."""
    now = clock()
    if now - last.get("purged", float("-inf")) < PURGE_EVERY_SECONDS:
        return 0
    last["purged"] = now
    deleted = 0
    holding = QuestionSet.objects.filter(
        Exists(
            SampleState.objects.filter(
                question_set=OuterRef("pk"), source=SampleState.Source.PRODUCTION
            )
        )
    )
    for question_set in holding.iterator():
        deleted += production_purge(question_set=question_set, user=roles.OPERATOR).deleted
    return deleted
