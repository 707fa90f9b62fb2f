"""Teams and their members: a team owns question sets (and API tokens); each member holds one
role in it (`questions.roles` says what a role may do). A user may hold different roles in
different teams."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class Team(models.Model):
    #: the team every set of a one-team install belongs to (made by migration 0034, from the
    #: groups the console had before teams)
    DEFAULT = "default"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("team-detail", args=[self.slug])


class Membership(models.Model):
    """A user's one role in a team."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "viewer"
        AUTHOR = "author", "author"
        REVIEWER = "reviewer", "reviewer"
        ADMIN = "admin", "admin"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="one_role_per_team"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.team_id}: {self.role}"


class CallHold(models.Model):
    """Provider calls a process is asking now for a team, outside a batch run (a single ask, a
    proof): they count against the team's daily budget until the work ends (the row is deleted
    then; one left by a process that died counts until the day ends)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="call_holds")
    calls = models.PositiveIntegerField(help_text="calls still to ask")
    what = models.CharField(max_length=40)
    started_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["team", "started_at"], name="call_hold_day")]

    def __str__(self) -> str:
        return f"{self.what}: {self.calls} of team {self.team_id}"
