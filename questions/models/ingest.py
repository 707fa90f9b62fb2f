"""Production states coming in: a set's ingest settings (sampling, retention, the daily quota,
redaction) and the count of states it received each day, which the quota holds."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from questions.core import redaction
from questions.models.sets import QuestionSet


def _builtins() -> list[str]:
    return list(redaction.BUILTINS)


class IngestSettings(models.Model):
    """How a set takes production states; a set without a row takes the defaults
    (`IngestSettings.defaults_for`)."""

    question_set = models.OneToOneField(
        QuestionSet, on_delete=models.CASCADE, primary_key=True, related_name="ingest_settings"
    )
    #: keep 1 state in N (by the hash of the state as sent, so a state is always in or out)
    keep_one_in = models.PositiveIntegerField(default=1)
    #: unlabelled production states older than this many days are purged
    retention_days = models.PositiveIntegerField(default=30)
    #: at most this many states received a day (UTC), kept or not
    daily_quota = models.PositiveIntegerField(null=True, blank=True)  # None: the console's
    drop_paths = models.JSONField(default=list, blank=True)
    mask_patterns = models.JSONField(default=list, blank=True)
    builtins = models.JSONField(default=_builtins, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "ingest settings"

    def __str__(self) -> str:
        return f"ingest settings of {self.question_set_id}"

    @classmethod
    def defaults_for(cls, question_set: QuestionSet) -> IngestSettings:
        """The settings row of a set that has none yet (not saved)."""
        return cls(question_set=question_set)

    @classmethod
    def of(cls, question_set: QuestionSet) -> IngestSettings:
        """A set's ingest settings: its row, or the defaults (not saved)."""
        found = cls.objects.filter(question_set=question_set).first()
        return found if found is not None else cls.defaults_for(question_set)

    @property
    def quota(self) -> int:
        """The daily quota in force: the set's, else the console's default."""
        if self.daily_quota is None:
            return settings.DECISIONS_INGEST_DAILY_QUOTA
        return self.daily_quota


class IngestDay(models.Model):
    """How many states a set received on one day (UTC): what its daily quota holds."""

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="ingest_days"
    )
    day = models.DateField()
    received = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "day"], name="ingest_day_unique")
        ]

    def __str__(self) -> str:
        return f"{self.question_set_id} {self.day}: {self.received}"
