"""Decisions: every call that went out to a backend, and its answers per question."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from questions.models.sets import (
    Version,
)
from questions.models.states import SampleStateRevision


class Decision(models.Model):
    """One live call to a provider, recorded whatever its outcome. The request is
    stored as the exact body sent, in the author's order and without the key (its canonical
    hash keys replay); a response that spoke about the key is not stored."""

    backend = models.CharField(max_length=20)
    model_asked = models.CharField(max_length=200)
    model_answered = models.CharField(max_length=200, blank=True)
    request_text = models.TextField(help_text="the exact request body sent (never the key)")
    request_sha256 = models.CharField(max_length=64)
    state_sha256 = models.CharField(max_length=64)
    questions_sha256 = models.CharField(max_length=64)
    response_text = models.TextField(blank=True, help_text="the raw response body")
    status = models.PositiveSmallIntegerField(help_text="200, or the mapped error status")
    provider_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    detail = models.TextField(blank=True)
    provider_detail = models.TextField(blank=True)
    usage = models.JSONField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    provider_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField()
    request_id = models.CharField(max_length=200, blank=True)
    calibrated = models.BooleanField(
        default=True, help_text="False: the probabilities are a chat model's words (seed 001)"
    )
    version = models.ForeignKey(
        Version, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    sample_state = models.ForeignKey(
        SampleStateRevision,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="decisions",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["created_at"], name="decision_made_at")]  # a day's calls

    def __str__(self) -> str:
        return f"{self.backend} {self.status} {self.created_at:%Y-%m-%d %H:%M}"


class DecisionAnswer(models.Model):
    """One checked answer of a recorded decision, found again by what was asked."""

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="answers")
    question_id = models.CharField(max_length=128)
    question_sha256 = models.CharField(max_length=64)
    state_sha256 = models.CharField(max_length=64)
    model = models.CharField(max_length=200, help_text="the model asked")
    model_answered = models.CharField(max_length=200, blank=True)
    answer = models.JSONField()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["question_sha256", "state_sha256", "model"], name="answer_lookup"),
        ]

    def __str__(self) -> str:
        return f"{self.question_id} ({self.model})"
