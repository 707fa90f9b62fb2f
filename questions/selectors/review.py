"""The review queue and page: what a version is reviewed against, the runs' evidence, the
comparisons it leads with, and the page's whole content (`review_page`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Avg, QuerySet

from questions.core import check, controls, diff, spec
from questions.engine import backends
from questions.exports import approval_of
from questions.models import BatchRun, Label, Version
from questions.selectors import advice, control_reports, runs, sets, suggestions
from questions.selectors import lints as lint_reads
from questions.selectors.agreement import label_summaries
from questions.selectors.teams import visible_versions


def review_queue(user: Any) -> QuerySet[Version]:
    """The versions in review of the teams `user` reads, oldest first."""
    return (
        visible_versions(user)
        .filter(status=Version.Status.IN_REVIEW)
        .select_related("question_set", "author")
        .order_by("updated_at")
    )


def review_baseline(version: Version) -> tuple[Version | None, str]:
    """What a version is reviewed against: the version under `production`, else the last
    approved one (never itself)."""
    question_set = version.question_set
    label = question_set.labels.filter(name=Label.BASELINE).select_related("version").first()
    if label and label.version_id != version.pk:
        return label.version, Label.BASELINE
    approved = (
        question_set.versions.filter(status=Version.Status.APPROVED)
        .exclude(pk=version.pk)
        .order_by("-number")
        .first()
    )
    return approved, "the last approved version" if approved else ""


def run_evidence(run: BatchRun | None) -> dict[str, Any] | None:
    """What a review shows of a run: its overall figure (`runs.overall`), answered/failed,
    cost per call (a few aggregate queries, whatever the number of states). A read: the
    summary was stored when the run finished (`services.batches`; the migration that added it
    filled older runs)."""
    if run is None:
        return None
    counts = runs.run_counts(run)
    cost = run.items.exclude(decision=None).aggregate(cost=Avg("decision__cost"))["cost"]
    figure = runs.overall(run, left_out=True)
    return {
        "run": run.pk,
        "run_obj": run,
        "backend": run.backend,
        "calibrated": backends.calibrated(run.backend),
        "states": counts["total"],
        "answered": counts["answered"],
        "failed": counts["failed"],
        "checked": run.checked,
        "passed": run.passed,
        "pass_rate": run.pass_rate,
        "pass_rate_interval": figure.pass_rate_interval,
        "figure": figure,
        "rate_words": figure.words,
        "cost_per_call": cost,
    }


#: the flipped cells a review lists inline (the rest are in the compare grid)
REVIEW_FLIPS_SHOWN = 50


def review_evidence(version: Version, baseline: Version | None) -> dict[str, Any]:
    """This version's latest finished run against the baseline's on the same states: both
    pass rates, and the cells that flipped (regressions first), the first `REVIEW_FLIPS_SHOWN`
    listed."""
    this, base = runs.latest_run(version), runs.latest_run(baseline)
    return {
        "this": run_evidence(this),
        "base": run_evidence(base),
        "delta": runs.run_delta(base, this, version.document, REVIEW_FLIPS_SHOWN)
        if this and base
        else None,
        "flips_shown": REVIEW_FLIPS_SHOWN,
    }


def review_against(
    version: Version, baseline: Version | None, baseline_name: str = ""
) -> list[tuple[Version, str]]:
    """What a version is set against on its review page, each with why: the baseline
    (`review_baseline`: production, or the last approved version) — or, with nothing
    approved yet, its parent and the latest kept version. The first is the page's frame of
    reference: the verdict, the evidence and the questions' badges all read against it."""
    if baseline is not None:
        return [(baseline, baseline_name)]
    against: list[tuple[Version, str]] = []
    if version.parent_id:
        against.append((version.parent, "the version it came from"))
    kept = (
        version.question_set.versions.filter(status=Version.Status.KEPT)
        .exclude(pk=version.pk)
        .defer(*sets.WITHOUT_DOCUMENTS)
        .order_by("-number")
        .first()
    )
    if kept is not None and kept.pk != version.parent_id:
        against.append((kept, "the latest kept version"))
    elif kept is not None and against:
        against[0] = (against[0][0], "the version it came from, the latest kept one")
    return against


def review_comparisons(
    version: Version, against: list[tuple[Version, str]]
) -> list[dict[str, Any]]:
    """What the review page leads with: this version's latest finished run against the latest
    finished run of each version it is set against (`review_against`), each a paired verdict
    overall and per question, with the change and its paired interval (`paired_verdicts`),
    and both runs' overall figures (`runs.overall`). A comparison whose other version has no
    run says so."""
    this = runs.latest_run(version)
    out = []
    for other, why in against:
        base = runs.latest_run(other)
        verdicts = runs.paired_verdicts(base, this) if base and this else {}
        out.append(
            {
                "version": other,
                "why": why,
                "run_before": base,
                "run_after": this,
                "figure_before": runs.overall(base, left_out=True),
                "figure_after": runs.overall(this, left_out=True),
                "overall": verdicts.get("overall"),
                "questions": [(qid, p) for qid, p in verdicts.items() if qid != "overall"],
            }
        )
    return out


#: up to this many options, levels and cases in all, the review page writes every question's
#: out; above, those of unchanged questions load when opened (or all with ?full=1)
INLINE_ENTRIES = 400


def entry_count(document: dict) -> int:
    return sum(
        len(q["criteria"])
        for q in document.values()
        if isinstance(q, dict) and isinstance(q.get("criteria"), dict | list)
    )


def review_questions(
    document: dict, against_reference, against_parent, *, inline_all: bool = True
) -> list[dict]:
    """Every question of the version with its whole content, and what changed in it against
    the page's frame of reference (`review_against`'s first: the baseline, else the parent)
    and against the parent version, when that is another (either diff None when there is
    none). The entries of a question added, retyped or with changed entries are always
    written out; others' when `inline_all`."""
    by_reference = {q.id: q for q in against_reference.questions} if against_reference else {}
    by_parent = {q.id: q for q in against_parent.questions} if against_parent else {}
    questions = []
    for qid, question in document.items():
        base, parent = by_reference.get(qid), by_parent.get(qid)
        changed = any(
            d is not None
            and (
                d.status in ("added", "retyped")
                or any(c.label != "instructions" for c in d.changes)
            )
            for d in (base, parent)
        )
        questions.append(
            {
                "content": diff.question_content(qid, question),
                "reference": base,
                "parent": parent,
                "inline": inline_all or changed,
            }
        )
    return questions


def review_page(version: Version, *, full: bool = False) -> dict[str, Any]:
    """What the review page shows of a version, whoever looks: the verdict against what it is
    set against (`review_against`; the first, `reference`, is the frame of reference of the
    evidence and of the questions' badges), the diff against it (and against the parent, when
    that is another), its open lints per question and those accepted (with their reasons), the
    runs' evidence with what the labels settle and how far the labellers agree, the controls'
    verdicts, the advice curves, the labels and the events. Every question's entries are
    written out when `full` or when the version holds at most `INLINE_ENTRIES`; otherwise only
    those of the questions that changed. `weak_basis` is what approving reads
    (`services.weak_evidence`: against the baseline only)."""
    baseline, baseline_name = review_baseline(version)
    against = review_against(version, baseline, baseline_name)
    reference, reference_name = against[0] if against else (None, "")
    document = version.document
    found = lint_reads.version_lints(
        version,
        check.validate(
            document,
            limits=settings.DECISIONS_LIMITS,
            sample_states=sets.sample_state_paths(version.question_set),
        ).warnings,
    )
    lints = found.open  # the accepted ones are listed apart, with their reasons
    lints_of: dict[str, list[spec.Issue]] = {}
    for lint in lints:
        if lint.question is not None:
            lints_of.setdefault(lint.question, []).append(lint)
    parent = version.parent if version.parent_id else None
    against_reference = diff.document_diff(reference.document, document) if reference else None
    against_parent = None
    if parent is not None and (reference is None or parent.pk != reference.pk):
        against_parent = diff.document_diff(parent.document, document)
    evidence = review_evidence(version, reference)
    inline_all = full or entry_count(document) <= INLINE_ENTRIES
    questions = review_questions(document, against_reference, against_parent, inline_all=inline_all)
    removed: dict[str, tuple[diff.QuestionDiff, list[int]]] = {}
    for d, other in ((against_reference, reference), (against_parent, parent)):
        for q in d.questions if d else []:
            if q.status == "removed":
                removed.setdefault(q.id, (q, []))[1].append(other.number)
    page = {
        "comparisons": review_comparisons(version, against),
        "control_verdicts": control_reports.latest_verdicts(version),
        "approval": approval_of(version) if version.is_approved else None,
        "no_signal_words": controls.NO_SIGNAL,
        "set": version.question_set,
        "version": version,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "reference": reference,
        "reference_name": reference_name,
        "parent": parent,
        "diff": against_reference,
        "questions": [{**q, "lints": lints_of.get(q["content"].id, [])} for q in questions],
        "removed": list(removed.values()),
        "lints": lints,
        "accepted": lint_reads.accepted_rows(found),
        "events": version.events.select_related("actor"),
        "labels": sets.labels_of(version.question_set),
        "evidence": evidence,
        "made_from": suggestions.made_from(version),
        "label_agreement": label_summaries(version.question_set),
        "weak_basis": evidence if reference is baseline else {**evidence, "base": None},
        "advice": advice.review_curves(version),
        "evidence_rows": [
            (f"v{version.number} (this version)", evidence["this"], version),
            *(
                [(f"v{reference.number} ({reference_name})", evidence["base"], reference)]
                if reference
                else []
            ),
        ],
    }
    if evidence["this"] and evidence["base"]:
        page["compare_query"] = (
            f"col=run:{evidence['base']['run']}&col=run:{evidence['this']['run']}&filter=changes"
        )
    return page
