"""Reads that span models, shaped for the pages (one query per list, no N+1)."""

from __future__ import annotations

from django.db.models import OuterRef, Q, QuerySet, Subquery

from questions.models import QuestionSet, Version


def question_sets(search: str = "") -> QuerySet[QuestionSet]:
    """Sets with their newest version's number and status, last edited first."""
    newest = Version.objects.filter(question_set=OuterRef("pk")).order_by("-number")
    sets = QuestionSet.objects.select_related("owner").annotate(
        newest_number=Subquery(newest.values("number")[:1]),
        newest_status=Subquery(newest.values("status")[:1]),
    )
    if search.strip():
        term = search.strip()
        sets = sets.filter(
            Q(slug__icontains=term) | Q(name__icontains=term) | Q(description__icontains=term)
        )
    return sets.order_by("-updated_at")


def versions_of(question_set: QuestionSet) -> QuerySet[Version]:
    return question_set.versions.select_related("author", "parent").order_by("-number")
