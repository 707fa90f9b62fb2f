"""Change webhooks: endpoints per set, their deliveries and each attempt."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from questions.models.sets import (
    QuestionSet,
)


class Webhook(models.Model):
    """An endpoint a reviewer configured for a set: told of every approval and label move by a
    signed POST (HMAC-SHA256 of a timestamp and the body with `secret`, shown once when it is
    made)."""

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100, help_text="signs each body; never shown again")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question_set", "id"]

    def __str__(self) -> str:
        return f"{self.question_set.slug} → {self.url}"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the exact body, sent (and re-sent) by the task worker until an
    attempt answers 2xx or the attempts run out."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    delivery_id = models.CharField(max_length=36, unique=True)
    body_text = models.TextField(help_text="the exact JSON body every attempt sends")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook_id}: {self.status}"


class WebhookAttempt(models.Model):
    """One POST of a delivery: the endpoint's status code, or what went wrong instead (never
    what the endpoint answered: its body is not read)."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveSmallIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=400, blank=True)
    duration_ms = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="one_attempt_per_number")
        ]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}: {self.status_code or self.error}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
