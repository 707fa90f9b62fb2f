"""The runtime's API tokens and the log of who fetched which export."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from questions.models.sets import (
    QuestionSet,
    Version,
)
from questions.models.teams import Team


class APIToken(models.Model):
    """A bearer token of the application; only its SHA-256 is stored. It belongs to a team and
    reaches only that team's sets. Its scope says what it does: `read` fetches exports (of the
    sets it names; none named: of every set of its team), `ingest` posts production states (to
    the sets it names, and only those). It may expire."""

    class Scope(models.TextChoices):
        READ = "read", "read: fetch exports"
        INGEST = "ingest", "ingest: post production states"

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    question_sets = models.ManyToManyField(QuestionSet, blank=True, related_name="api_tokens")
    prefix = models.CharField(max_length=12, help_text="the first characters, to tell tokens apart")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: when it stops working (None: never)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None and not self.expired

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class ExportFetch(models.Model):
    """Who fetched what: the runtime's export fetches by one token of one set's label (or, with
    an empty label, by version number) within one minute — one row per token, set, label and
    minute, its count raised by every fetch in that minute, and the latest fetch's version,
    ETag and status (200 or 304). Nothing of the token's secret is kept: the row names the token.
    """

    class Status(models.IntegerChoices):
        SENT = 200, "200 sent"
        NOT_MODIFIED = 304, "304 not modified"

    token = models.ForeignKey(APIToken, on_delete=models.CASCADE, related_name="fetches")
    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="export_fetches"
    )
    label = models.CharField(max_length=36, blank=True)  # empty: fetched by ?version=N
    minute = models.DateTimeField()  # the minute the fetches fell in (seconds cut off)
    last_fetched_at = models.DateTimeField()
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="+")
    etag = models.CharField(max_length=80)  # the entity tag served, without quotes or W/
    status = models.PositiveSmallIntegerField(choices=Status.choices)
    fetches = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-last_fetched_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["token", "question_set", "label", "minute"], name="export_fetch_minute"
            )
        ]
        indexes = [
            models.Index(
                fields=["question_set", "label", "-last_fetched_at"], name="export_fetch_latest"
            )
        ]

    def __str__(self) -> str:
        return f"{self.question_set_id}@{self.label or '-'} by {self.token_id} at {self.minute}"
