"""Lint findings accepted with a reason: the one action (`lint_accept`) and its rules.

Who may accept: an author of the set — one who owns it, or created or edited one of its
versions (a superuser and the operator at the command line too). What is accepted: an open
warning of the version's saved document, about one question, named by its question and rule
(and its path, when the question has several of that rule); a draft's words are accepted once
they are saved. Why: a reason, required, at most `LintAcceptance.REASON_LIMIT` characters. The
record is append-only; it holds for the version and every version drawn from it while the
finding's words stay the same (`selectors.lints`)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q

from questions import roles
from questions.core import check
from questions.models import LintAcceptance, ReviewEvent, Version
from questions.selectors import lints as lint_reads
from questions.services.audit import audit_record
from questions.services.errors import Conflict, Invalid, NotAllowed, require, storable
from questions.services.versions import WRITERS_ONLY


class NoSuchFinding(Invalid):
    code = "no_such_finding"


def authors_the_set(user: Any, version: Version) -> bool:
    """Whether `user` is an author of `version`'s set: its owner, or one who created or edited
    one of its versions; the operator and a superuser are."""
    if user is roles.OPERATOR or getattr(user, "is_superuser", False):
        return True
    if not roles.may_write(user, version.question_set):
        return False
    question_set = version.question_set
    if question_set.owner_id == user.pk:
        return True
    return (
        Version.objects.filter(question_set=question_set)
        .filter(
            Q(author_id=user.pk)
            | Q(
                events__actor_id=user.pk,
                events__kind__in=(ReviewEvent.Kind.CREATED, ReviewEvent.Kind.EDITED),
            )
        )
        .exists()
    )


def _reason(reason: str) -> str:
    reason = storable((reason or "").strip(), "The reason")
    if not reason:
        raise Invalid(
            "Say why this finding is fine here: accepting one needs a reason.",
            code="reason_required",
        )
    limit = LintAcceptance.REASON_LIMIT
    if len(reason) > limit:
        raise Invalid(
            f"The reason has {len(reason):,} characters; at most {limit:,}.", code="reason_too_long"
        )
    return reason


@transaction.atomic
def lint_accept(
    *,
    version: Version,
    question: str,
    code: str,
    reason: str,
    actor: Any,
    path: str | None = None,
) -> LintAcceptance:
    """Accept the open `code` warning on `question` of `version`'s saved document (the one at
    `path`, when given) for `reason`: it stops showing for that question on every surface.
    `NotAllowed` unless `actor` authors the set; `Invalid` without a reason or with a longer
    one; `NoSuchFinding` when the saved document has no such open warning (or several, and no
    `path` says which); `Conflict` when it is accepted already."""
    require(actor, roles.may_write, WRITERS_ONLY, on=version.question_set)
    if not authors_the_set(actor, version):
        raise NotAllowed(
            f"Only the authors of {version.question_set.slug} accept its lints: its owner, "
            "or those who created or edited one of its versions."
        )
    reason = _reason(reason)
    found = lint_reads.version_lints(version)
    where = f" at `{path}`" if path else ""

    matching = [
        w for w in lint_reads.named(found.open, question, code, path) if check.acceptable(w)
    ]
    if not matching:
        if lint_reads.named(found.accepted, question, code, path):
            raise Conflict(
                f"The `{code}` warning on `{question}`{where} is accepted already.",
                code="accepted_already",
            )
        raise NoSuchFinding(
            f"Version {version.number} has no open `{code}` warning on `{question}`{where} "
            "(words typed in a draft are accepted once they are saved)."
        )
    if len(matching) > 1:
        places = ", ".join(f"`{w.path}`" for w in matching)
        raise NoSuchFinding(
            f"`{question}` has {len(matching)} `{code}` warnings ({places}): name the one to "
            "accept by its path."
        )
    finding = matching[0]
    acceptance = LintAcceptance(
        version=version,
        question=question,
        path=finding.path,
        code=code,
        words=check.finding_words(finding),
        message=finding.message,
        reason=reason,
        actor=roles.recorded_as(actor),
    )
    acceptance.full_clean()
    acceptance.save()
    audit_record(
        action="lint.accepted",
        actor=actor,
        obj=version,
        question_set=version.question_set,
        detail={"question": question, "code": code, "path": finding.path},
    )
    return acceptance
