"""Sets, their versions (with the QuerySet that names every version lookup), the review
events on a version, the lint findings accepted on it, and labels with their moves."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from questions.core import holdout, spec
from questions.models.teams import Team


class QuestionSetQuerySet(models.QuerySet):
    def in_teams(self, teams: Any) -> QuestionSetQuerySet:
        """The sets of `teams` (team ids: a list or a query of them; None: of every team)."""
        return self if teams is None else self.filter(team__in=teams)


class QuestionSet(models.Model):
    #: the team that owns the set: its members read and change it by their role there
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="question_sets")
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="question_sets"
    )
    #: the last version number handed out; a discarded draft's number is never reused
    version_counter = models.PositiveIntegerField(default=0, editable=False)
    #: how many labellers' answers settle a state's question (1: the newest label settles it)
    labels_needed = models.PositiveSmallIntegerField(default=1)
    #: whether a labeller sees the model's answer before giving theirs (off: it anchors)
    labels_show_model = models.BooleanField(default=False)
    #: the share of the states, in whole percent, held out for proving a wording
    #: (`questions.core.holdout`); the rest are left to draft from
    holdout_share = models.PositiveSmallIntegerField(default=holdout.DEFAULT_SHARE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = QuestionSetQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("set-detail", args=[self.slug])


class VersionQuerySet(models.QuerySet):
    """The lookups of versions the console asks for (Bennett: the ORM carries the vocabulary)."""

    def in_teams(self, teams: Any) -> VersionQuerySet:
        """The versions of the sets of `teams` (team ids; None: of every team)."""
        return self if teams is None else self.filter(question_set__team__in=teams)

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


class LintAcceptance(models.Model):
    """A lint finding accepted with a reason: append-only, a row per acceptance, never changed
    or removed. It holds for the version it was accepted on and every version drawn from it
    (`parent`, at any depth), while the finding is the same one: the same place (`path`), rule
    (`code`) and words (`words`, the finding's `actual`); a finding whose words changed is a
    new one and shows again."""

    #: the longest reason a person writes for accepting a finding
    REASON_LIMIT = 500

    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="lint_acceptances")
    question = models.TextField()
    path = models.TextField()
    code = models.CharField(max_length=64)
    words = models.TextField(blank=True, help_text="the words that fired, as the finding had them")
    message = models.TextField(help_text="the finding's message when it was accepted")
    reason = models.TextField()
    #: who accepted it: nobody for the operator at the command line
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.version}: {self.code} at {self.path} accepted"
