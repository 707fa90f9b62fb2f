"""Persistence only. Every write goes through `questions/services.py`.

Documents and states are kept as JSON *text*: PostgreSQL's jsonb would reorder a choice's
options (declared order is what the author wrote and what the charts show), and a JSONField
stores a JSON `null` state as SQL NULL. Text keeps both exactly.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from questions.core import answers, spec


class QuestionSet(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="question_sets"
    )
    #: the last version number handed out; a discarded draft's number is never reused
    version_counter = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("set-detail", args=[self.slug])


class VersionQuerySet(models.QuerySet):
    """The lookups of versions the console asks for (Bennett: the ORM carries the vocabulary)."""

    def of(self, slug: str, number: int) -> VersionQuerySet:
        """Version `number` of the set `slug`."""
        return self.filter(question_set__slug=slug, number=number)

    def drafts(self) -> VersionQuerySet:
        return self.filter(status=Version.Status.DRAFT)

    def open_draft(self) -> Version | None:
        """A set's one open draft (on `question_set.versions`), if it has one."""
        return self.drafts().first()

    def approved(
        self, slug: str, *, label: str | None = None, number: int | None = None
    ) -> VersionQuerySet:
        """The approved version of the set `slug` that `label` points at, or approved version
        `number` (exactly one of them); nothing for neither or both — never a fallback."""
        found = self.filter(question_set__slug=slug, status=Version.Status.APPROVED)
        if (label is None) == (number is None):
            return found.none()
        return (
            found.filter(labels__name=label) if label is not None else found.filter(number=number)
        )


class Version(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        KEPT = "kept", "kept"
        IN_REVIEW = "in_review", "in review"
        APPROVED = spec.EXPORT_STATUS, "approved"  # the status an export carries
        CHANGES_REQUESTED = "changes_requested", "changes requested"

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    document_text = models.TextField(help_text="the questions map as JSON, in declared order")
    sha256 = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="versions"
    )
    revision = models.PositiveIntegerField(default=1, help_text="bumped by every saved edit")
    advice_text = models.TextField(
        blank=True,
        help_text="advice as JSON, beside the questions, never sent; empty: none",
    )
    approved_model = models.CharField(
        max_length=200, blank=True, help_text="DECISIONS__MODEL when approved; its export's model"
    )
    #: the concrete model(s) that answered the approval's evidence run, frozen at approval: a
    #: name, a sorted list when several did, None when no run or no model name was recorded
    approved_model_answered = models.JSONField(
        null=True,
        blank=True,
        help_text="who answered the approval's evidence run; its export's answered_by",
    )
    approved_evidence_run = models.ForeignKey(
        "BatchRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the run the version was approved on (its latest finished plain run)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = VersionQuerySet.as_manager()

    class Meta:
        ordering = ["question_set", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["question_set", "number"], name="version_number_unique"
            ),
            models.UniqueConstraint(
                fields=["question_set"], condition=Q(status="draft"), name="one_open_draft_per_set"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.question_set.slug} v{self.number}"

    def get_absolute_url(self) -> str:
        return reverse("version-edit", args=[self.question_set.slug, self.number])

    @property
    def document(self) -> dict[str, Any]:
        return spec.loads(self.document_text)

    @property
    def is_draft(self) -> bool:
        return self.status == self.Status.DRAFT

    @property
    def is_kept(self) -> bool:
        return self.status == self.Status.KEPT

    @property
    def is_in_review(self) -> bool:
        return self.status == self.Status.IN_REVIEW

    @property
    def is_approved(self) -> bool:
        return self.status == self.Status.APPROVED

    @property
    def advice(self) -> dict[str, Any]:
        """The advisory thresholds by question id (empty when there are none)."""
        return spec.loads(self.advice_text) if self.advice_text else {}


class ReviewEvent(models.Model):
    """The record of a version's life: created, edited here; the review workflow adds the rest."""

    class Kind(models.TextChoices):
        CREATED = "created"
        EDITED = "edited"
        KEPT = "kept"
        SUBMITTED = "submitted"
        APPROVED = "approved"
        CHANGES_REQUESTED = "changes_requested", "changes requested"
        COMMENTED = "commented"

    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.version}: {self.kind}"


class SampleState(models.Model):
    """A named state of a set, with optional expected answers per question id and tags."""

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="sample_states"
    )
    name = models.CharField(max_length=128)
    state_text = models.TextField(help_text="any JSON value; `null` is a value")
    expected = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True)
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "name"], name="state_name_unique")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def state(self) -> Any:
        return spec.loads(self.state_text)

    @property
    def size(self) -> int:
        return len(self.state_text.encode())

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
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
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


class Label(models.Model):
    """A movable named pointer from a set to one of its approved versions."""

    #: what a label name may be; written so that Python and an HTML `pattern` (a `v`-flag
    #: JavaScript regex, where a `-` in a class is escaped) read it alike
    NAME_PATTERN = r"[a-z0-9_.\-]{1,36}"
    #: the label a review compares against (and the set list shows), and those a form suggests
    BASELINE = "production"
    SUGGESTED = (BASELINE, "staging")

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=36)
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="labels")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["question_set", "name"], name="label_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.question_set.slug}@{self.name}"


class LabelMove(models.Model):
    """The append-only history of label moves: who, from, to, when."""

    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="label_moves"
    )
    name = models.CharField(max_length=36)
    from_version = models.ForeignKey(
        Version, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    to_version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="+")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name}: {self.from_version_id} → {self.to_version_id}"


class APIToken(models.Model):
    """A bearer token for the runtime's export fetch; only its SHA-256 is stored."""

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="the first characters, to tell tokens apart")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


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
    #: where the item comes in its run's results table (`selectors.results_order`), set with
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
            # a run's failing states (`selectors.FAILING_ITEM`), read from the index alone
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
    this run set against that one (`metrics.delta_as_json`: the counts and the first changed
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
