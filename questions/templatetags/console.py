"""Template helpers for the console's pages: issue slots and inline diffs, built in Python
because the editor renders hundreds of them per page."""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from questions.forms import slot_id

register = template.Library()


def _issues_html(issues) -> SafeString:
    return format_html_join(
        "",
        '<p class="issue {}" data-code="{}"><span class="badge">{}</span> {}</p>',
        (
            (kind, issue.code, kind, issue.message)
            for kind, group in (("error", issues[0]), ("warning", issues[1]))
            for issue in group
        ),
    )


@register.simple_tag
def slot(errors, warnings, card: str, part: str, row: str | None = None, oob: bool = False):
    """The issues of one field: `errors`/`warnings` are dicts placed by `place_issues`."""
    sid = slot_id(card, part, row) if card else "slot-document"
    found = (errors.get(sid, []), warnings.get(sid, []))
    return format_html(
        '<div id="{}" class="slot" aria-live="polite"{}>{}</div>',
        sid,
        mark_safe(' hx-swap-oob="true"') if oob else "",
        _issues_html(found),
    )


@register.simple_tag
def segments(parts) -> SafeString:
    """Inline diff segments as <ins>/<del>."""
    tags = {"insert": "ins", "delete": "del"}
    return format_html_join(
        "",
        "{}",
        (
            (format_html("<{0}>{1}</{0}>", tags[op], text) if op in tags else text,)
            for op, text in parts
        ),
    )


@register.filter
def kib(size) -> str:
    """A byte count for people: `812 bytes`, `3.8 KiB`, `256 KiB`."""
    if size is None:
        return "?"
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    value = f"{size / 1024:.1f}".removesuffix(".0")
    return f"{value} KiB"


@register.filter
def uncalibrated(backend: str) -> bool:
    """Whether decisions through this backend (a run's, a recording's) are not calibrated."""
    from questions import backends

    return not backends.calibrated(backend)


@register.inclusion_tag("questions/_advice_review.html")
def advice_curves(version):
    """The advice of a version with its curves over the latest labelled run, for the review."""
    from questions.views.advice import designer_items, labelled_runs

    run = labelled_runs(version).first()
    return {
        "version": version,
        "set": version.question_set,
        "run": run,
        "items": designer_items(version, run) if version.advice else [],
    }
