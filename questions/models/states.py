"""Sample states and the revisions every asked state keeps."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from questions.core import ingest, spec
from questions.models.sets import (
    QuestionSet,
)


class SampleState(models.Model):
    """A named state of a set, with optional expected answers per question id and tags; typed
    or uploaded by a person (`manual`), or sent by the application (`production`: redacted
    before it was stored, with the version, label and answers production answered it with, and
    when)."""

    class Source(models.TextChoices):
        MANUAL = "manual", "manual"
        PRODUCTION = ingest.SOURCE, ingest.SOURCE

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="sample_states"
    )
    name = models.CharField(max_length=128)
    state_text = models.TextField(help_text="any JSON value; `null` is a value")
    #: the SHA-256 of the state's canonical JSON (`spec.state_sha256`): equal content, equal hash
    state_sha256 = models.CharField(max_length=64, default="", editable=False)
    expected = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    #: what production answered, per question id, in the runtime's answer shape (never expected)
    production_answers = models.JSONField(default=dict, blank=True)
    production_version = models.PositiveIntegerField(null=True, blank=True)
    production_label = models.CharField(max_length=36, blank=True)
    #: when production saw the state (its `at`, else when it arrived)
    observed_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "name"], name="state_name_unique")
        ]
        indexes = [
            models.Index(fields=["question_set", "state_sha256"], name="state_content"),
            models.Index(fields=["question_set", "source", "observed_at"], name="state_source"),
            # the fingerprint of a set's states (how many, the sum of their revisions) in one
            # index read: what the labelling page's kept counts are checked against
            models.Index(fields=["question_set", "revision"], name="state_revisions"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def state(self) -> Any:
        return spec.loads(self.state_text)

    @property
    def size(self) -> int:
        return len(self.state_text.encode())

    def revision_record(self, author) -> SampleStateRevision:
        """The revision that records this state as it is now (not saved yet)."""
        return SampleStateRevision(
            sample_state=self,
            revision=self.revision,
            name=self.name,
            state_text=self.state_text,
            state_sha256=spec.state_sha256(self.state),
            expected=self.expected,
            tags=self.tags,
            author=author,
        )

    def current_revision(self) -> SampleStateRevision | None:
        """The saved content this state has now (what a decision asked about it runs on)."""
        return self.revisions.filter(revision=self.revision).first()


class SampleStateRevision(models.Model):
    """One saved content of a sample state; recordings point at the exact one they ran on."""

    sample_state = models.ForeignKey(
        SampleState, on_delete=models.CASCADE, related_name="revisions"
    )
    revision = models.PositiveIntegerField()
    name = models.CharField(max_length=128)
    state_text = models.TextField()
    state_sha256 = models.CharField(max_length=64)
    expected = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True)
    #: None: nobody typed it (a production state as it arrived)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sample_state", "-revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample_state", "revision"], name="state_revision_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} r{self.revision}"

    @property
    def state(self) -> Any:
        return spec.loads(self.state_text)
