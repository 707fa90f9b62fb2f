"""Production states coming in: a set's ingest settings, and every rule of taking a request of
states (`states_ingest`) — who may post, the limits, the daily quota, sampling, redaction before
anything is stored or logged, deduplication by content — for the endpoint and the command line
alike. All or nothing: a request refused stores nothing and counts nothing against the quota.
What it reports and logs are counts; no state, whole or in part, leaves it."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from questions import roles
from questions.core import ingest, redaction, spec
from questions.models import (
    IngestDay,
    IngestSettings,
    QuestionSet,
    SampleState,
    SampleStateRevision,
)
from questions.services import bulk
from questions.services.audit import audit_record
from questions.services.errors import Invalid, NotAllowed, NotFound, ServiceError, require
from questions.services.tokens import INGEST, Bearer, api_token_permit
from questions.services.versions import document_text, limits

log = logging.getLogger("questions.ingest")

SETTINGS_ONLY = "Only reviewers and admins change how a set takes production states."
TOKEN_ONLY = "Production states come with an ingest token (or from the server's command line)."

#: what a production state is called: this and the first characters of its content's hash
NAME_PREFIX = "production-"
NAME_HEX = (12, 20, 64)  # longer only when a state of the set has the shorter name already

#: the bounds of a set's ingest settings
MOST_KEEP_ONE_IN = 1_000_000
MOST_RETENTION_DAYS = 3650
MOST_DAILY_QUOTA = 1_000_000_000


class BodyRefused(ServiceError):
    """The request's body cannot be taken (400, 413, 415 or 422: the status it carries)."""

    def __init__(self, message: str, *, status: int, code: str):
        super().__init__(message, code=code)
        self.status = status


class OverQuota(ServiceError):
    """The set has received its daily quota of states (429); `retry_after` is the seconds until
    the next day (UTC) starts."""

    status = 429
    code = "over_quota"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class IngestCounts:
    """What a request did: the states it held, those stored, those already stored (or sent
    twice), those sampling left out, and how many of the states sampling kept had a value
    dropped or masked."""

    received: int
    kept: int
    duplicates: int
    sampled_out: int
    redacted: int

    def as_json(self) -> dict[str, int]:
        return asdict(self)


# --- settings ----------------------------------------------------------------------------------


def ingest_settings_of(question_set: QuestionSet) -> IngestSettings:
    """The set's ingest settings: its row, or the defaults (not saved)."""
    return IngestSettings.of(question_set)


def rules_of(found: IngestSettings) -> redaction.Rules:
    """The redaction a set's settings ask for."""
    return redaction.rules(drop=found.drop_paths, mask=found.mask_patterns, builtins=found.builtins)


#: each bounded setting: its name in words (the page's), and the code a refusal carries
BOUNDED = {
    "keep_one_in": "Keep 1 in N",
    "retention_days": "The retention in days",
    "daily_quota": "The daily quota",
}


def _bounded(value: int, field: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise Invalid(f"{BOUNDED[field]} is a whole number from 1 to {most:,}.", code=field)
    return value


@transaction.atomic
def ingest_configure(
    *,
    question_set: QuestionSet,
    user: Any,
    keep_one_in: int | None = None,
    retention_days: int | None = None,
    daily_quota: int | None = None,
    drop: list[str] | None = None,
    mask: list[str] | None = None,
    builtins: list[str] | None = None,
) -> IngestSettings:
    """Change how a set takes production states; what is left out (None) stays as it is. A
    drop path or mask pattern that cannot work is refused, naming it, and nothing changes."""
    require(user, roles.may_review, SETTINGS_ONLY, on=question_set)
    found, _ = IngestSettings.objects.select_for_update().get_or_create(question_set=question_set)
    if keep_one_in is not None:
        found.keep_one_in = _bounded(keep_one_in, "keep_one_in", MOST_KEEP_ONE_IN)
    if retention_days is not None:
        found.retention_days = _bounded(retention_days, "retention_days", MOST_RETENTION_DAYS)
    if daily_quota is not None:
        found.daily_quota = _bounded(daily_quota, "daily_quota", MOST_DAILY_QUOTA)
    if drop is not None:
        found.drop_paths = [p.strip() for p in drop]
    if mask is not None:
        found.mask_patterns = list(mask)
    if builtins is not None:
        found.builtins = [b.strip() for b in builtins if b.strip()]
    try:
        found.builtins = list(rules_of(found).builtins)  # in the order they apply
    except redaction.RuleError as exc:
        raise Invalid(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", code="redaction_rule") from None
    found.save()
    audit_record(
        action="set.settings_changed",
        actor=user,
        obj=question_set,
        question_set=question_set,
        detail={"ingest": ingest_settings_json(found)},
    )
    return found


def ingest_settings_json(found: IngestSettings, *, received_today: int | None = None) -> dict:
    """A set's ingest settings as `questions ingest-config --json` prints them."""
    value = {
        "set": found.question_set.slug,
        "keep_one_in": found.keep_one_in,
        "retention_days": found.retention_days,
        "daily_quota": found.quota,
        "drop": list(found.drop_paths),
        "mask": list(found.mask_patterns),
        "builtins": list(found.builtins),
    }
    if received_today is not None:
        value["received_today"] = received_today
    return value


def received_today(question_set: QuestionSet) -> int:
    """How many states the set has received today (UTC)."""
    day = IngestDay.objects.filter(question_set=question_set, day=_today()).first()
    return day.received if day is not None else 0


# --- a request of states -----------------------------------------------------------------------


def _today() -> Any:
    return timezone.now().astimezone(UTC).date()


def _until_tomorrow(now: datetime) -> int:
    """Whole seconds from `now` until the next day (UTC) starts, at least 1."""
    now = now.astimezone(UTC)
    tomorrow = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    return max(1, int((tomorrow - now).total_seconds()) + 1)


def _permit(by: Any, slug: str) -> None:
    if isinstance(by, Bearer):
        api_token_permit(by, scope=INGEST, slug=slug)
    elif by is not roles.OPERATOR:
        raise NotAllowed(TOKEN_ONLY, code="ingest_token_only")


@dataclass
class _Prepared:
    record: ingest.Record
    state: dict[str, Any]
    answers: dict[str, Any]
    sha256: str


def _read(body: bytes, media_type: str | None) -> list[ingest.Record]:
    if media_type not in ingest.MEDIA_TYPES:
        raise BodyRefused(
            f"Send {ingest.JSON} (one record) or {ingest.NDJSON} (one record a line) as the "
            "Content-Type.",
            status=415,
            code="media_type",
        )
    try:
        return ingest.read(
            body,
            ndjson=media_type == ingest.NDJSON,
            max_lines=settings.DECISIONS_INGEST_MAX_LINES,
            max_bytes=settings.DECISIONS_INGEST_MAX_BYTES,
            max_state_bytes=limits().max_state_bytes,
        )
    except ingest.BodyError as exc:
        raise BodyRefused(str(exc), status=exc.status, code=exc.code) from None


def states_ingest(*, slug: str, body: bytes, media_type: str | None, by: Any) -> IngestCounts:
    """Take a request of production states for the set `slug`, sent by `by` (an ingest token's
    `Bearer`, or the operator at the command line): refused whole — `NotAllowed` (403) for a
    token of another scope or set, `BodyRefused` (415, 413, 400, 422) for a body that cannot be
    taken, `OverQuota` (429) past the set's daily quota — or taken whole. Sampling keeps 1 state
    in N (`ingest.Record.kept`); each kept state is redacted (`redaction.redact`, the set's
    rules), then stored as a `production` sample state unless a state of the set has that
    content already (or an earlier line of the request had it): then it is a duplicate."""
    _permit(by, slug)
    records = _read(body, media_type)
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        raise NotFound(f"There is no set {slug}.")
    found = ingest_settings_of(question_set)
    rules = rules_of(found)
    answer_rules = redaction.Rules(masks=rules.masks, builtins=rules.builtins)
    prepared, sampled_out, redacted = [], 0, 0
    for record in records:
        if not record.kept(found.keep_one_in):
            sampled_out += 1
            continue
        state, state_changed = redaction.redact(record.state, rules)
        answers, answers_changed = redaction.redact(record.answers, answer_rules)
        redacted += state_changed or answers_changed
        prepared.append(_Prepared(record, state, answers, spec.state_sha256(state)))
    with transaction.atomic():
        _count_against_quota(question_set, len(records), found.quota)
        fresh = _new_states(question_set, prepared)
        _store(question_set, fresh)
        if fresh:  # a request that stored nothing changed nothing
            audit_record(
                action="states.ingested",
                actor=f"token {by.id}" if isinstance(by, Bearer) else by,
                question_set=question_set,
                detail={"received": len(records), "kept": len(fresh)},
            )
    counts = IngestCounts(
        received=len(records),
        kept=len(fresh),
        duplicates=len(prepared) - len(fresh),
        sampled_out=sampled_out,
        redacted=redacted,
    )
    log.info(
        "ingest set=%s received=%d kept=%d duplicates=%d sampled_out=%d redacted=%d",
        slug,
        *asdict(counts).values(),
        extra={"set": slug, **counts.as_json()},
    )
    return counts


def _count_against_quota(question_set: QuestionSet, n: int, quota: int) -> None:
    """Add `n` to the set's count of today, or refuse (`OverQuota`) when that passes `quota`.
    One conditional UPDATE: it holds the day's row until the transaction ends, so two requests
    of one set deduplicate and store one after the other. A request larger than the whole
    quota could never be taken, on any day: 413, not a 429 that says to wait."""
    if n > quota:
        raise BodyRefused(
            f"This request holds {n:,} states; {question_set.slug}'s daily quota is {quota:,}, "
            "so it could never be taken. Nothing was stored; send fewer states a request, or "
            "raise the quota (manage.py questions ingest-config --daily-quota).",
            status=413,
            code="larger_than_quota",
        )
    day = _today()
    IngestDay.objects.get_or_create(question_set=question_set, day=day)
    counted = IngestDay.objects.filter(
        question_set=question_set, day=day, received__lte=quota - n
    ).update(received=F("received") + n)
    if counted:
        return
    so_far = IngestDay.objects.get(question_set=question_set, day=day).received
    raise OverQuota(
        f"{question_set.slug} has received {so_far:,} states today (UTC); its daily quota is "
        f"{quota:,} and this request's {n:,} would pass it. Nothing was stored; try again "
        "tomorrow, or raise the quota (manage.py questions ingest-config --daily-quota).",
        retry_after=_until_tomorrow(timezone.now()),
    )


def _new_states(question_set: QuestionSet, prepared: list[_Prepared]) -> list[_Prepared]:
    """The prepared states whose content no state of the set has, each content once."""
    hashes = {p.sha256 for p in prepared}
    stored = set(
        SampleState.objects.filter(question_set=question_set, state_sha256__in=hashes).values_list(
            "state_sha256", flat=True
        )
    )
    fresh = []
    for p in prepared:
        if p.sha256 in stored:
            continue
        stored.add(p.sha256)
        fresh.append(p)
    return fresh


def _names(question_set: QuestionSet, fresh: list[_Prepared]) -> list[str]:
    """A name per new state, from its hash: the shortest form no state of the set has."""
    names = [f"{NAME_PREFIX}{p.sha256[: NAME_HEX[0]]}" for p in fresh]
    taken = set(question_set.sample_states.filter(name__in=names).values_list("name", flat=True))
    if not taken and len(set(names)) == len(names):
        return names
    everything = set(question_set.sample_states.values_list("name", flat=True))
    chosen = []
    for p in fresh:
        name = next(
            f"{NAME_PREFIX}{p.sha256[:width]}"
            for width in NAME_HEX
            if f"{NAME_PREFIX}{p.sha256[:width]}" not in everything or width == NAME_HEX[-1]
        )
        everything.add(name)
        chosen.append(name)
    return chosen


def _store(question_set: QuestionSet, fresh: list[_Prepared]) -> None:
    """The new states and their first revisions (nobody's: production's), in two inserts."""
    if not fresh:
        return
    now = timezone.now()
    rows = []
    for p, name in zip(fresh, _names(question_set, fresh), strict=True):
        rows.append(
            {
                "question_set_id": question_set.pk,
                "name": name,
                "state_text": document_text(p.state),
                "state_sha256": p.sha256,
                "source": SampleState.Source.PRODUCTION.value,
                "production_answers": p.answers,
                "production_version": p.record.version,
                "production_label": p.record.label,
                "observed_at": p.record.at or now,
            }
        )
    ids = bulk.insert(SampleState, rows)
    bulk.insert(
        SampleStateRevision,
        [
            {
                "sample_state_id": pk,
                "revision": 1,
                "name": row["name"],
                "state_text": row["state_text"],
                "state_sha256": row["state_sha256"],
                "author_id": None,
            }
            for pk, row in zip(ids, rows, strict=True)
        ],
        ids=False,
    )
