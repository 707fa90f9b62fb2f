"""A version's lints as every surface shows them (the editor, the review page, `questions
validate`, the gate): the warnings of its document, with the findings accepted on it or on a
version it was drawn from set apart (`core.check.split_accepted`). Two queries at most, none
with no warning: the set's acceptances, and — only when it has any — its versions' parents."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from questions.core import check, spec
from questions.models import LintAcceptance, Version
from questions.selectors import sets


def lineage(version: Version) -> list[int]:
    """The ids of `version` and of every version it was drawn from, nearest first (one query
    of the set's versions' parents, however long the line)."""
    parents = dict(
        Version.objects.filter(question_set_id=version.question_set_id).values_list(
            "pk", "parent_id"
        )
    )
    line, at = [], version.pk
    while at is not None and at not in line:
        line.append(at)
        at = parents.get(at)
    return line


def acceptances_of(version: Version) -> list[LintAcceptance]:
    """The acceptances in effect on `version`: its own and those of the versions it was drawn
    from, oldest first, with who accepted and on which version."""
    found = list(
        LintAcceptance.objects.filter(version__question_set_id=version.question_set_id)
        .select_related("actor", "version")
        .order_by("created_at", "id")
    )
    if not found:
        return []
    line = set(lineage(version))
    return [a for a in found if a.version_id in line]


def accepted_keys(acceptances: list[LintAcceptance]) -> set[check.FindingKey]:
    return {(a.path, a.code, a.words) for a in acceptances}


@dataclass
class Lints:
    """A version's warnings: those still open, and the acceptances in effect with whether a
    finding of the document is theirs (one whose words changed no longer is)."""

    open: list[spec.Issue]
    accepted: list[spec.Issue]
    acceptances: list[LintAcceptance] = field(default_factory=list)
    applying: set[int] = field(default_factory=set)  # the acceptances a finding matched


def version_lints(
    version: Version,
    warnings: list[spec.Issue] | None = None,
    acceptances: list[LintAcceptance] | None = None,
) -> Lints:
    """`warnings` (by default those of the version's saved document, its set's sample states
    read for the state-path lint) set apart by the acceptances in effect on `version`."""
    if warnings is None:
        warnings = check.validate(
            version.document,
            limits=settings.DECISIONS_LIMITS,
            sample_states=sets.sample_state_paths(version.question_set),
        ).warnings
    if acceptances is None:  # no warning, nothing to set apart: no query
        acceptances = acceptances_of(version) if warnings else []
    still_open, accepted = check.split_accepted(warnings, accepted_keys(acceptances))
    keys = {check.finding_key(w) for w in accepted}
    applying = {a.pk for a in acceptances if (a.path, a.code, a.words) in keys}
    return Lints(still_open, accepted, acceptances, applying)


def named(
    issues: list[spec.Issue], question: str, code: str, path: str | None = None
) -> list[spec.Issue]:
    """The findings of `issues` on `question` by rule `code` (at `path`, when given)."""
    return [
        w
        for w in issues
        if w.question == question and w.code == code and (path is None or w.path == path)
    ]


def accepted_rows(lints: Lints) -> list[dict[str, Any]]:
    """The acceptances in effect, as the review page lists them: each with the version it was
    accepted on and whether it still matches a finding."""
    return [
        {
            "acceptance": a,
            "applies": a.pk in lints.applying,
            "on": a.version.number,
            "words": _shown(a.words),
        }
        for a in lints.acceptances
    ]


def _shown(words: str) -> str:
    """The words a finding fired on as people read them: a list of them joined by slashes."""
    if not words.startswith("["):
        return words
    try:
        value = json.loads(words)
    except ValueError:
        return words
    return " / ".join(str(w) for w in value) if isinstance(value, list) else words
