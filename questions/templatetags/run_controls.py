"""`{% run_control section %}`: a control's or a drift run's report section on the run page, as
the view worked it out (`control_reports.section`: the tag reads nothing itself), and `run_kind`
for run lists."""

from __future__ import annotations

from typing import Any

from django import template

from questions.core import attribution, controls, gate, invariance
from questions.models import BatchRun

register = template.Library()


@register.inclusion_tag("questions/_run_control.html")
def run_control(section: dict[str, Any] | None) -> dict[str, Any]:
    """The section the view worked out (`control_reports.section`); nothing for a plain run."""
    return section or {"kind": None}


@register.filter
def run_kind(run: BatchRun) -> str:
    """What kind of run it is, as a run list says it: a try with what it asked live (the rest
    was replayed), a control with its count, drift, a gate run; empty for a full run."""
    if run.kind in controls.KINDS:
        return f"{controls.TITLES[run.kind]} ×{run.control_count}"
    if run.kind == invariance.KIND:
        return invariance.TITLE
    if run.kind == attribution.KIND:
        return "attribution"
    if run.kind == "drift":
        return "drift"
    if run.kind == gate.KIND:
        return gate.TITLE
    if run.live_questions is not None:
        live = ", ".join(run.live_questions) or "nothing"
        return f"try: {live} asked live, the rest replayed"
    return ""


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


@register.filter
def signed_percent(value: float | None) -> str:
    return "—" if value is None else f"{value:+.0%}"
