"""Suggestions: rewordings of one question drafted from a run's failing training states and
proven on the held-out ones (`questions.services.suggestions`), and the draft one became."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from questions.core import spec
from questions.models.runs import BatchRun
from questions.models.sets import QuestionSet, Version


class Suggestion(models.Model):
    """One suggestion's record: what it was asked for, how far it has come, what it found.

    Its candidates (`candidates`: a list, each the reworded question, its reason, what the
    contract and the lints said, and its proof) are written as they are proven; `evidence`
    holds what attribution found of each failing state — names and the question's own words,
    never a state's content."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        FAILED = "failed"

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="suggestions"
    )
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="suggestions")
    #: the version's content the candidates are proven against (a draft may change after)
    version_sha256 = models.CharField(max_length=64)
    question = models.CharField(max_length=128)
    run = models.ForeignKey(
        BatchRun,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the run whose failing training states they are drafted from",
    )
    backend = models.CharField(max_length=20, help_text="attributes and proves")
    model = models.CharField(max_length=200)
    draft_model = models.CharField(max_length=200, help_text="the llm model asked to draft")
    draft_model_answered = models.CharField(max_length=200, blank=True)
    candidates_wanted = models.PositiveSmallIntegerField()
    shuffles = models.PositiveSmallIntegerField(default=1)
    max_calls = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    #: what it is doing now, in words ("proving candidate 2 of 3")
    stage = models.CharField(max_length=200, blank=True)
    cancel_requested = models.BooleanField(default=False)
    detail = models.TextField(blank=True)
    calls_planned = models.PositiveIntegerField(default=0)
    calls_done = models.PositiveIntegerField(default=0)
    calls_failed = models.PositiveIntegerField(default=0)
    #: the plan as it was said before asking, and the candidates: JSON text, as a version's
    #: document is (they hold questions, whose keys' order jsonb would not keep)
    plan_text = models.TextField(default="{}")
    candidates_text = models.TextField(default="[]")
    evidence = models.JSONField(default=list, blank=True)
    draft_usage = models.JSONField(default=dict, blank=True)
    draft_cost = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="who asked (none: the operator, at the command line)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: the draft made from one of its candidates ("Use this", `questions suggest --apply`)
    applied_version = models.ForeignKey(
        Version, null=True, blank=True, on_delete=models.SET_NULL, related_name="made_from"
    )
    applied_candidate = models.PositiveSmallIntegerField(null=True, blank=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["version", "question"], name="suggestion_of_question")]

    def __str__(self) -> str:
        return f"suggestion {self.pk} for {self.version} {self.question}"

    @property
    def plan(self) -> dict[str, Any]:
        return spec.loads(self.plan_text)

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return spec.loads(self.candidates_text)

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.CANCELLED, self.Status.FAILED)

    def candidate(self, number: int) -> dict | None:
        """Candidate `number` (as drafted, from 1), or None."""
        return next((c for c in self.candidates if c.get("number") == number), None)
