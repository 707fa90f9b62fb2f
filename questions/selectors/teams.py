"""What a user sees of the teams' work: the sets, versions, runs, states and webhooks of the teams
they are a member of (`roles.readable_teams`), as querysets every lookup of a page starts from —
a member of another team finds nothing there, so the page answers 404 as for a set that is not
there. A team's page: its members and what it spent today."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from questions import roles
from questions.models import (
    BatchRun,
    Membership,
    QuestionSet,
    SampleState,
    Team,
    Version,
    VersionQuerySet,
    Webhook,
)


def visible_sets(user: Any) -> QuerySet[QuestionSet]:
    return QuestionSet.objects.in_teams(roles.readable_teams(user))


def visible_versions(user: Any) -> VersionQuerySet:
    return Version.objects.in_teams(roles.readable_teams(user))


def _of_sets(rows: QuerySet, user: Any) -> QuerySet:
    teams = roles.readable_teams(user)
    return rows if teams is None else rows.filter(question_set__team__in=teams)


def visible_runs(user: Any) -> QuerySet[BatchRun]:
    return _of_sets(BatchRun.objects.all(), user)


def visible_states(user: Any) -> QuerySet[SampleState]:
    return _of_sets(SampleState.objects.all(), user)


def visible_webhooks(user: Any) -> QuerySet[Webhook]:
    return _of_sets(Webhook.objects.all(), user)


def visible_teams(user: Any) -> QuerySet[Team]:
    teams = roles.readable_teams(user)
    return Team.objects.all() if teams is None else Team.objects.filter(pk__in=teams)


def several_teams(user: Any) -> bool:
    """Whether `user` sees the sets of more than one team (a page then names each set's team);
    from the roles already read, so a one-team page costs no query for it."""
    if roles.readable_teams(user) is None:
        return Team.objects.all()[:2].count() > 1
    return len(roles.memberships(user)) > 1


def members_of(team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("user__username")
