"""The admin: a window on the records. A version that is not a draft is read-only here as
everywhere; a draft's document is saved through `services.version_save`, like the editor's."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages

from questions import services
from questions.core import spec
from questions.models import (
    AuditEntry,
    Decision,
    DecisionAnswer,
    LintAcceptance,
    Membership,
    QuestionSet,
    ReviewEvent,
    SampleState,
    SampleStateRevision,
    Team,
    Version,
)
from questions.services.errors import TEXT_LIMIT, Invalid, a_name, storable
from questions.services.teams import team_default
from questions.services.versions import check_slug


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class VersionInline(admin.TabularInline):
    model = Version
    fields = ("number", "status", "author", "revision", "updated_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class QuestionSetForm(forms.ModelForm):
    """A set's slug, name and description held to the rules `services.question_set_create`
    applies (one owner of each: `check_slug`, `a_name`, `storable`), so the admin is no second
    door for a name the console refuses."""

    class Meta:
        model = QuestionSet
        fields = ("team", "slug", "name", "description", "owner")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].required = False
        self.fields["team"].help_text = "empty: the default team"

    def clean_team(self) -> Team:
        return self.cleaned_data.get("team") or team_default()

    @staticmethod
    def _ruled(rule, *args) -> str:
        try:
            return rule(*args)
        except Invalid as exc:
            raise forms.ValidationError(str(exc), code=exc.code) from None

    def clean_slug(self) -> str:
        return self._ruled(check_slug, self.cleaned_data["slug"])

    def clean_name(self) -> str:
        return self._ruled(a_name, self.cleaned_data["name"], "The set's name")

    def clean_description(self) -> str:
        return self._ruled(
            storable, self.cleaned_data["description"], "The set's description", TEXT_LIMIT
        )


class MembershipInline(admin.TabularInline):
    """A team's members, read only: roles change on the team's page or with `questions member`,
    where the rules (one admin at least) and the audit log are."""

    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """The audit log, read only: no row is changed nor deleted, here neither."""

    list_display = ("at", "team", "actor_name", "action", "object_repr", "set_slug", "address")
    list_filter = ("team", "action", "via")
    search_fields = ("actor_name", "object_repr", "set_slug")

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Team)
class TeamAdmin(ReadOnlyAdmin):
    list_display = ("slug", "name", "created_at")
    inlines = [MembershipInline]


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    form = QuestionSetForm
    list_display = ("slug", "name", "team", "owner", "updated_at")
    list_filter = ("team",)
    search_fields = ("slug", "name", "description")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [VersionInline]


class DraftForm(forms.ModelForm):
    """A draft's document as JSON text, saved through `services.version_save` with the revision
    the form was opened at: a save over someone else's newer revision is refused."""

    base_revision = forms.IntegerField(widget=forms.HiddenInput, required=True)

    class Meta:
        model = Version
        fields = ("document_text",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["base_revision"].initial = self.instance.revision

    def clean_base_revision(self) -> int:
        base = self.cleaned_data["base_revision"]
        current = Version.objects.values_list("revision", flat=True).get(pk=self.instance.pk)
        if base != current:
            raise forms.ValidationError(
                services.StaleRevision(current, base).args[0], code="stale_revision"
            )
        return base

    def clean_document_text(self) -> str:
        text = self.cleaned_data["document_text"]
        try:
            value = spec.loads(text)
        except spec.JSONTextError as exc:
            raise forms.ValidationError(f"Not JSON: {exc}", code="not_json") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("A document is a JSON object.", code="not_object")
        return text


@admin.register(Version)
class VersionAdmin(admin.ModelAdmin):
    list_display = ("question_set", "number", "status", "author", "revision", "updated_at")
    list_filter = ("status",)
    search_fields = ("question_set__slug",)
    form = DraftForm
    readonly_fields = (
        "question_set",
        "number",
        "status",
        "sha256",
        "parent",
        "author",
        "revision",
        "created_at",
        "updated_at",
    )

    def has_add_permission(self, request) -> bool:
        return False  # versions are made by import or "new draft from this version"

    def has_change_permission(self, request, obj=None) -> bool:
        # Django's permission as well: reviewers who are not staff reach the admin too
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or obj.is_draft)

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and obj is not None and obj.is_draft

    def save_model(self, request, obj, form, change) -> None:
        try:
            services.version_save(
                version=obj,
                document=spec.loads(form.cleaned_data["document_text"]),
                base_revision=form.cleaned_data["base_revision"],
                author=request.user,
            )
        except services.ServiceError as exc:
            messages.error(request, str(exc))

    def delete_model(self, request, obj) -> None:
        services.version_discard(version=obj, author=request.user)


@admin.register(ReviewEvent)
class ReviewEventAdmin(ReadOnlyAdmin):
    list_display = ("version", "kind", "actor", "created_at")
    list_filter = ("kind",)


@admin.register(LintAcceptance)
class LintAcceptanceAdmin(ReadOnlyAdmin):
    """Accepted lint findings: an append-only record, so not even removed here."""

    list_display = ("version", "question", "code", "actor", "created_at")
    list_filter = ("code",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SampleState)
class SampleStateAdmin(ReadOnlyAdmin):
    list_display = ("question_set", "name", "source", "revision", "updated_at")
    list_filter = ("source",)
    search_fields = ("name", "question_set__slug")


@admin.register(SampleStateRevision)
class SampleStateRevisionAdmin(ReadOnlyAdmin):
    list_display = ("sample_state", "revision", "author", "created_at")


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "backend",
        "status",
        "model_asked",
        "model_answered",
        "provider_ms",
        "total_ms",
        "user",
    )
    list_filter = ("backend", "status")


@admin.register(DecisionAnswer)
class DecisionAnswerAdmin(ReadOnlyAdmin):
    list_display = ("question_id", "model", "decision")
    search_fields = ("question_id", "question_sha256", "state_sha256")
