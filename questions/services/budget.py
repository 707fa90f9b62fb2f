"""A team's daily budget of provider calls (`DECISIONS__TEAM_DAILY_CALLS`; 0, the default: no
budget). Every step that starts provider work asks it first — a batch run of any kind (a run, a
re-run, a try, a control, a drift run, an attribution, a gate's run: `batches._new_run`), a single
ask (the preview, a live comparison column, `questions ask`: `decisions.decision_ask`), a
proof (`proofs.proof_run`) and a suggestion (`suggestions.suggestion_start`) — and work that
would pass it is refused before anything is sent, with the figures ("This run asks 1,200
provider calls; today's budget of payments has 340 left …").

What a day has spent is read from the records, so nothing drifts: the calls made since the day
(UTC) began (each a `Decision` of a version of the team's sets, through a provider's wire), and
those in flight — the states still pending or being asked in the team's queued and running
batch runs, the calls its queued and running suggestions have still to make, and the calls a
process holds while it asks outside a run (`CallHold`). A cancelled
run's pending states stop counting at once; retries count as they are made. A team's row is
locked while its budget is read and the new work recorded, so two starts at once cannot both
take the last calls (on PostgreSQL; SQLite serialises writers anyway).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from questions import roles
from questions.engine import backends
from questions.models import BatchItem, BatchRun, CallHold, Decision, Suggestion, Team
from questions.services.errors import ServiceError

#: the wires that call a provider (the recorded replay and your own rules call none)
PROVIDER_WIRES = tuple(backends.LIVE)


class OverBudget(ServiceError):
    """The work would pass its team's daily budget of provider calls (429); nothing started."""

    status = 429
    code = "over_budget"


@dataclass(frozen=True)
class Spend:
    """A team's provider calls today: made, in flight, and the budget (None: no budget)."""

    day: date
    made: int
    in_flight: int
    limit: int | None

    @property
    def used(self) -> int:
        return self.made + self.in_flight

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    def as_json(self) -> dict[str, Any]:
        return {
            "day": self.day.isoformat(),
            "made": self.made,
            "in_flight": self.in_flight,
            "daily_limit": self.limit,
            "left": self.left,
        }


def daily_limit() -> int | None:
    return settings.DECISIONS_TEAM_DAILY_CALLS or None


def calls_through(backend: str) -> bool:
    """Whether asking through `backend` spends provider calls."""
    return backend in PROVIDER_WIRES


def _day_start(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date(), time.min, tzinfo=UTC)


def team_spend(team: Any) -> Spend:
    """What the team of `team` (a team, a set, an id) spent today (UTC), and its budget."""
    team_id = roles.team_id(team)
    now = timezone.now()
    since = _day_start(now)
    made = Decision.objects.filter(
        created_at__gte=since,
        backend__in=PROVIDER_WIRES,
        version__question_set__team_id=team_id,
    ).count()
    pending = BatchItem.objects.filter(
        run__question_set__team_id=team_id,
        run__status__in=(BatchRun.Status.QUEUED, BatchRun.Status.RUNNING),
        run__backend__in=PROVIDER_WIRES,
        status__in=(BatchItem.Status.PENDING, BatchItem.Status.RUNNING),
    ).count()
    held = CallHold.objects.filter(team_id=team_id, started_at__gte=since).aggregate(
        n=Sum("calls")
    )["n"]
    suggesting = Suggestion.objects.filter(
        question_set__team_id=team_id,
        status__in=(Suggestion.Status.QUEUED, Suggestion.Status.RUNNING),
        backend__in=PROVIDER_WIRES,
        calls_planned__gt=F("calls_done"),
    ).aggregate(n=Sum(F("calls_planned") - F("calls_done")))["n"]
    return Spend(since.date(), made, pending + (held or 0) + (suggesting or 0), daily_limit())


def refusal(what: str, calls: int, spend: Spend, team_slug: str) -> str:
    """The words of a refusal, with the figures."""
    return (
        f"{what} asks {calls:,} provider call{'' if calls == 1 else 's'}; today's budget of "
        f"{team_slug} has {spend.left:,} left ({spend.limit:,} a day, {spend.used:,} made or in "
        "flight). Nothing was started; the budget starts again at 00:00 UTC, or ask fewer "
        "states."
    )


def budget_reserve(*, team: Any, calls: int, what: str) -> None:
    """Refuse (`OverBudget`) work of `calls` provider calls that would pass the team's budget;
    call it inside the transaction that records the work (its run's items, its hold): the
    team's row stays locked until that commits."""
    if daily_limit() is None or calls <= 0:
        return
    locked = Team.objects.select_for_update().only("slug").get(pk=roles.team_id(team))
    spend = team_spend(locked)
    if calls > (spend.left or 0):
        raise OverBudget(refusal(what, calls, spend, locked.slug))


class Hold:
    """Calls held for work asking in this process; `spent` counts one made (it is a `Decision`
    now), so the hold no longer counts it twice."""

    def __init__(self, pk: int | None):
        self.pk = pk

    def spent(self, calls: int = 1) -> None:
        if self.pk is not None:
            CallHold.objects.filter(pk=self.pk, calls__gte=calls).update(calls=F("calls") - calls)


@contextmanager
def budget_hold(*, team: Any, calls: int, what: str) -> Iterator[Hold]:
    """Reserve `calls` of the team's budget for work done in this process, held until it ends
    (`OverBudget` before anything is asked). No budget: nothing is read or written."""
    if daily_limit() is None or calls <= 0:
        yield Hold(None)
        return
    with transaction.atomic():
        budget_reserve(team=team, calls=calls, what=what)
        hold = CallHold.objects.create(team_id=roles.team_id(team), calls=calls, what=what[:40])
    try:
        yield Hold(hold.pk)
    finally:
        CallHold.objects.filter(pk=hold.pk).delete()
