"""Labels per labeller: each person's expected answer to one question of one sample state, the
reviewer's settlement of a dispute, and the few minutes a state is held for its labeller.

A state's *settled* answers stay in `SampleState.expected` (every pass rate, the scorecard, the
gate and the exports read them there); `services.labels` keeps them equal to what the labels and
the settlements decide.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from questions.models.sets import QuestionSet
from questions.models.states import SampleState


class StateLabel(models.Model):
    """One labeller's answer to one question of a state. Append-only: changing a label adds a
    row and leaves the old one not `current`; an undo takes the newest back (`undone_at`) and
    makes the row before it current again."""

    sample_state = models.ForeignKey(SampleState, on_delete=models.CASCADE, related_name="labels")
    question_id = models.CharField(max_length=128)
    answer = models.JSONField()
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="state_labels"
    )
    current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample_state", "question_id", "labeller"],
                condition=models.Q(current=True),
                name="state_label_current_unique",
            )
        ]
        indexes = [
            models.Index(fields=["labeller", "created_at"], name="state_label_by_labeller"),
            models.Index(fields=["sample_state", "question_id"], name="state_label_by_question"),
        ]

    def __str__(self) -> str:
        return f"{self.sample_state_id}:{self.question_id}={self.answer!r} by {self.labeller_id}"


class LabelSettlement(models.Model):
    """A reviewer's word on a disputed question of a state: its answer, or ambiguous (left out
    of the pass rates, counted where they show). One per state and question."""

    class Outcome(models.TextChoices):
        SETTLED = "settled", "settled"
        AMBIGUOUS = "ambiguous", "ambiguous"

    sample_state = models.ForeignKey(
        SampleState, on_delete=models.CASCADE, related_name="settlements"
    )
    question_id = models.CharField(max_length=128)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    answer = models.JSONField(null=True, blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="label_settlements"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["sample_state", "question_id"], name="label_settlement_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.sample_state_id}:{self.question_id} {self.outcome}"


class LabelReservation(models.Model):
    """A state held for one labeller until `until`, so two people do not spend the last
    needed label twice. A labeller holds one state of a set at a time."""

    sample_state = models.ForeignKey(
        SampleState, on_delete=models.CASCADE, related_name="reservations"
    )
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="label_reservations"
    )
    until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sample_state", "labeller"], name="label_reservation_unique"
            )
        ]
        indexes = [models.Index(fields=["sample_state", "until"], name="label_reservation_live")]

    def __str__(self) -> str:
        return f"{self.sample_state_id} held for {self.labeller_id} until {self.until:%H:%M}"


class LabelQueue(models.Model):
    """The set's states worth labelling next (`labelling.rank`), ranked once when a run of the
    set finishes (the answers the ranking reads change only then) for the version a state is
    labelled for: the labelling page serves the next state from it instead of ranking every
    state on each key press (`selectors.labels.label_queue`)."""

    question_set = models.OneToOneField(
        QuestionSet, on_delete=models.CASCADE, related_name="label_queue"
    )
    version_number = models.PositiveIntegerField()
    built_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"labelling queue of {self.question_set_id} for v{self.version_number}"


class LabelQueueEntry(models.Model):
    """One ranked state of a queue: its place, and its unlabelled questions and why, as the
    ranking gave them when the queue was built."""

    queue = models.ForeignKey(LabelQueue, on_delete=models.CASCADE, related_name="entries")
    sample_state = models.ForeignKey(SampleState, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    questions = models.JSONField()
    reasons = models.JSONField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "position"], name="label_queue_position")
        ]

    def __str__(self) -> str:
        return f"{self.position}: {self.sample_state_id}"
