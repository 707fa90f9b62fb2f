"""Batch runs, their items and stored reports, and the task workers' heartbeats."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from questions.core import answers
from questions.models.decisions import Decision
from questions.models.sets import (
    QuestionSet,
    Version,
)
from questions.models.states import SampleState, SampleStateRevision


class BatchRun(models.Model):
    """One version asked about many sample states through one backend, by a worker."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        FAILED = "failed"

    #: a run's defaults and bounds, the one definition the services, the command line and the
    #: run form (through the context, `context_processors.console`) use
    DEFAULT_CONCURRENCY = 4
    MAX_CONCURRENCY = 128
    DEFAULT_ATTEMPTS = 4
    DEFAULT_THRESHOLD = answers.NOUL_THRESHOLD

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="batch_runs"
    )
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="batch_runs")
    backend = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    concurrency = models.PositiveSmallIntegerField(default=DEFAULT_CONCURRENCY)
    max_attempts = models.PositiveSmallIntegerField(default=DEFAULT_ATTEMPTS)
    threshold = models.FloatField(
        default=DEFAULT_THRESHOLD, help_text="a noul's P(true) at or above is true"
    )
    tag = models.CharField(max_length=64, blank=True, help_text="only states with this tag")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    detail = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    rerun_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reruns",
        help_text="the run whose failed states this run asks again",
    )
    #: a plain run, a control (`questions.controls`: each state asked once per variant) or a
    #: drift run (the approved version on another model, set against `baseline`)
    kind = models.CharField(max_length=12, default="run")
    #: the kind of a plain run: the one the pages take by default (latest run, compare, advice)
    PLAIN = "run"
    control_count = models.PositiveSmallIntegerField(
        default=0, help_text="shuffles, orders or repeats of a control"
    )
    control_seed = models.PositiveIntegerField(default=0)
    #: an attribution run's plan (`questions.core.attribution.Plan.as_json`): the questions
    #: attributed, the unchanged repeats and the parts left out, one variant each
    attribution = models.JSONField(
        null=True, blank=True, help_text="an attribution run's plan: what each variant leaves out"
    )
    live_questions = models.JSONField(
        null=True,
        blank=True,
        help_text="the question ids asked live; the rest are replayed from recordings "
        "(null: every question is asked)",
    )
    question_hashes = models.JSONField(
        default=dict, blank=True, help_text="question id → content sha256, as the run asked them"
    )
    baseline = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="drift_runs",
        help_text="the run this one is set against: a drift run's last run on the approved "
        "model; a try across states' 'before'",
    )
    # the run's summary, stored when it finishes (services.run_summary_store): None before
    checked = models.PositiveIntegerField(
        null=True, blank=True, help_text="question-state pairs with an expected answer"
    )
    passed = models.PositiveIntegerField(null=True, blank=True, help_text="of those, passed")
    failed_states = models.PositiveIntegerField(
        null=True, blank=True, help_text="states that got no answer"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.version}"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.CANCELLED, self.Status.FAILED)

    @property
    def pass_rate(self) -> float | None:
        """The stored pass rate of a finished run; None before, or with nothing checked."""
        return self.passed / self.checked if self.checked else None

    @property
    def outcome(self) -> str:
        """The status as colours show it: `partial` for a finished run some of whose states
        failed (`failed` when every one did)."""
        if self.status != self.Status.FAILED and self.finished and self.failed_states:
            return "partial"
        return self.status


class BatchItem(models.Model):
    """One sample state (the exact revision) in a run, and what became of it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        ANSWERED = "answered"
        FAILED = "failed"
        CANCELLED = "cancelled"

    run = models.ForeignKey(BatchRun, on_delete=models.CASCADE, related_name="items")
    sample_state = models.ForeignKey(
        SampleStateRevision, on_delete=models.PROTECT, related_name="batch_items"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    decision = models.ForeignKey(
        Decision, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answers = models.JSONField(null=True, blank=True, help_text="the checked answers by id")
    error_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_detail = models.TextField(blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    #: which of a control's calls about the state this is (`questions.controls`); 0 otherwise
    variant = models.PositiveSmallIntegerField(default=0)
    misses = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="answers that missed the expected one (set at the end)"
    )
    #: what its answers decide (`metrics.decided`: per question its type and the value it
    #: flips on), written with them: "changes only" in the comparison skips, in the database,
    #: a state whose items decide alike; NULL, not "": not worked out, and unequal to anything
    decided = models.CharField(  # noqa: DJ001
        max_length=32, null=True, blank=True, help_text="what its answers decide (a digest)"
    )
    #: where the item comes in its run's results table (`runs.results_order`), set with
    #: `misses` when the run finishes, so a page of the table reads an index, not every item
    place = models.PositiveIntegerField(
        null=True, blank=True, help_text="its place in the run's results (set at the end)"
    )
    #: the sample state of `sample_state` (a revision of it), copied when the item is made: a
    #: read by state (the set page's "failing in the last run") needs no revision
    state = models.ForeignKey(
        SampleState, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "sample_state", "variant"], name="one_item_per_state_variant"
            )
        ]
        indexes = [
            # a page of the results table of a finished run, in order
            models.Index(fields=["run", "variant", "place"], name="item_place"),
            # a run's counts by status
            models.Index(fields=["run", "status"], name="item_status"),
            # a run's calls that made a decision (cost, models that answered)
            models.Index(fields=["run", "decision"], name="item_decision"),
            # a state's item in a run: what "changes only" sets against the first column's
            # (`comparison._moved`), one probe of the index alone a state, not a scan of the run
            models.Index(
                fields=["run", "variant", "state", "status", "decided"], name="item_run_state"
            ),
            # a run's failing states (`runs.FAILING_ITEM`), read from the index alone
            models.Index(
                fields=["run", "variant", "misses", "status", "state"], name="item_failing"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.sample_state_id}: {self.status}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Saved with its copy of its revision's state (`bulk_create` sets it itself)."""
        if self.state_id is None and self.sample_state_id is not None:
            self.state_id = self.sample_state.sample_state_id
        super().save(*args, **kwargs)


class RunReport(models.Model):
    """A finished run's report, worked out once when the run finishes (`services.batches`
    through `services.summaries`) and read by the run and review pages in constant time:
    `against` None holds its test report (`metrics.report_as_json`); `against` a run holds
    this run set against that one (`deltas.delta_as_json`: the counts and the first changed
    cells), the pair the review of its version shows."""

    run = models.ForeignKey(BatchRun, on_delete=models.CASCADE, related_name="reports")
    against = models.ForeignKey(
        BatchRun, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "against"], name="one_report_per_pair"),
            models.UniqueConstraint(
                fields=["run"], condition=Q(against=None), name="one_report_per_run"
            ),
        ]

    def __str__(self) -> str:
        return f"report of run {self.run_id}" + (
            f" against {self.against_id}" if self.against_id else ""
        )


class RunPairing(models.Model):
    """Two finished runs of a set (`first` the older) whose states that decide otherwise
    between them are recorded (`RunMove`), once, when the later of them finishes: "changes
    only" in the comparison reads them instead of probing every state's items
    (`comparison._moved`). A pair with no row here has not been recorded."""

    first = models.ForeignKey(BatchRun, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(BatchRun, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="one_pairing_per_pair")
        ]

    def __str__(self) -> str:
        return f"runs {self.first_id} and {self.second_id}"


class RunMove(models.Model):
    """A state whose real calls (variant 0) in a pairing's two runs decide otherwise
    (`BatchItem.decided` differs, or either was not worked out): its answers may have flipped."""

    pairing = models.ForeignKey(RunPairing, on_delete=models.CASCADE, related_name="moves")
    state = models.ForeignKey(SampleState, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pairing", "state"], name="one_move_per_state")
        ]

    def __str__(self) -> str:
        return f"{self.state_id} moved between runs of pairing {self.pairing_id}"


class WorkerHeartbeat(models.Model):
    """A task worker's sign of life (`questions.workers`), read by `/healthz`."""

    worker_id = models.CharField(max_length=64, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    busy = models.BooleanField(default=False, help_text="running a task at the last beat")
    started_at = models.DateTimeField(auto_now_add=True)
    beat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.worker_id} on {self.host} ({self.pid})"
