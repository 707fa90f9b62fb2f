"""The audit log: one row per state-changing action — who, when, what, the object, from which
address — written by the services in the transaction of the change, and never updated or
deleted by the application: the model and its queryset refuse both (`AppendOnly`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from questions.models.teams import Team


class AppendOnly(Exception):
    """An audit row is written once: the application neither changes nor deletes one."""


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("Audit rows are never changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("Audit rows are never deleted.")

    # bulk_update goes through update(); _raw_delete is what a cascade would use
    def _raw_delete(self, using: Any) -> int:
        raise AppendOnly("Audit rows are never deleted.")

    def of_team(self, team: Team) -> AuditQuerySet:
        """The team's rows, and the team-less ones (a sign-in) of its members."""
        members = team.memberships.values("user_id")
        return self.filter(models.Q(team=team) | models.Q(team=None, actor_id__in=members))


class AuditEntry(models.Model):
    """One action. `actor` is kept by id (a user deleted later leaves the row as it was) with
    the name they had; `object_*` name what the action changed, `set_slug` the set it was of;
    `detail` holds a few words of what changed (a role's from and to, a run's kind and size),
    never a state, a document or a secret."""

    class Via(models.TextChoices):
        WEB = "web", "the web"
        API = "api", "the API"
        CLI = "cli", "the command line"
        WORKER = "worker", "a task worker"

    at = models.DateTimeField(default=timezone.now, db_index=True)
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_entries"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=20, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    set_slug = models.CharField(max_length=64, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    via = models.CharField(max_length=10, choices=Via.choices)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["team", "-at"], name="audit_team_at"),
            models.Index(fields=["team", "action", "-at"], name="audit_team_action"),
            models.Index(fields=["team", "set_slug", "-at"], name="audit_team_set"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_repr}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("Audit rows are never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnly("Audit rows are never deleted.")
