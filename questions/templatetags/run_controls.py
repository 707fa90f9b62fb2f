"""`{% run_control run %}`: a control's or a drift run's report section on the run page, from
`questions.control_reports` (nothing for a plain run), and `run_kind` for run lists."""

from __future__ import annotations

from typing import Any

from django import template

from questions import control_reports, controls
from questions.models import BatchRun

register = template.Library()


@register.inclusion_tag("questions/_run_control.html")
def run_control(run: BatchRun) -> dict[str, Any]:
    if control_reports.is_control(run):
        report = control_reports.control_report(run)
        return {
            "run": run,
            "kind": run.kind,
            "title": controls.TITLES[run.kind],
            "questions": list(report.values()),
            "no_signal": [q.question for q in report.values() if q.no_signal],
            "no_signal_words": controls.NO_SIGNAL,
            "margin": controls.CLEAR_MARGIN,
        }
    if run.kind == "drift":
        found = control_reports.drift_of(run)
        return {
            "run": run,
            "kind": run.kind,
            "drift": found,
            "pass_rate_delta": controls.delta(found.before.pass_rate, found.after.pass_rate)
            if found
            else None,
            "calibration": found.calibration() if found else {},
        }
    return {"run": run, "kind": None}


@register.filter
def run_kind(run: BatchRun) -> str:
    """What kind of run it is, as a run list says it: empty for a plain run."""
    if run.kind in controls.KINDS:
        return f"{controls.TITLES[run.kind]} ×{run.control_count}"
    return "drift" if run.kind == "drift" else ""


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


@register.filter
def signed_percent(value: float | None) -> str:
    return "—" if value is None else f"{value:+.0%}"
