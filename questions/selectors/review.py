"""The review queue and page: what a version is reviewed against, the runs' evidence and the
comparisons it leads with."""

from __future__ import annotations

from typing import Any

from django.db.models import Avg, QuerySet

from questions.core import stats
from questions.engine import backends
from questions.models import BatchRun, Label, Version
from questions.selectors import runs
from questions.selectors.sets import WITHOUT_DOCUMENTS


def review_queue() -> QuerySet[Version]:
    return (
        Version.objects.filter(status=Version.Status.IN_REVIEW)
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
    """What a review shows of a run: its stored pass rate, answered/failed, cost per call
    (a few aggregate queries, whatever the number of states). A read: the summary was stored
    when the run finished (`services.batches`; the migration that added it filled older runs)."""
    if run is None:
        return None
    counts = runs.run_counts(run)
    cost = run.items.exclude(decision=None).aggregate(cost=Avg("decision__cost"))["cost"]
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
        "pass_rate_interval": stats.interval_list(run.passed or 0, run.checked or 0),
        "rate_words": stats.rate_words(run.passed or 0, run.checked or 0),
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


def review_comparisons(
    version: Version, baseline: Version | None, baseline_name: str = ""
) -> list[dict[str, Any]]:
    """What the review page leads with: this version's latest finished run against the
    baseline's (`review_baseline`: production, or the last approved version) — or, with
    nothing approved yet, against its parent's and the latest kept version's — each a paired
    verdict per question and overall (`paired_verdicts`). A comparison whose other version has
    no run says so."""
    against: list[tuple[Version, str]] = []
    if baseline is not None:
        against.append((baseline, baseline_name))
    else:
        if version.parent_id:
            against.append((version.parent, "the version it came from"))
        kept = (
            version.question_set.versions.filter(status=Version.Status.KEPT)
            .exclude(pk=version.pk)
            .defer(*WITHOUT_DOCUMENTS)
            .order_by("-number")
            .first()
        )
        if kept is not None and kept.pk != version.parent_id:
            against.append((kept, "the latest kept version"))
        elif kept is not None and against:
            against[0] = (against[0][0], "the version it came from, the latest kept one")
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
                "rate_before": stats.rate_words(base.passed or 0, base.checked or 0)
                if base
                else None,
                "rate_after": stats.rate_words(this.passed or 0, this.checked or 0)
                if this
                else None,
                "overall": verdicts.get("overall"),
                "questions": [(qid, p) for qid, p in verdicts.items() if qid != "overall"],
            }
        )
    return out
