"""Template helpers for the console's pages: issue slots and inline diffs, built in Python
because the editor renders hundreds of them per page."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import urlencode

from django import template
from django.utils import timezone
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from questions.core import metrics, stats
from questions.core.answers import NOUL_THRESHOLD
from questions.core.check import acceptable
from questions.forms import slot_id
from questions.models import Version

register = template.Library()


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def code(text) -> SafeString:
    """A message with its `backtick` spans as <code> (everything else escaped)."""
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escape(text)))


@register.filter
def answer(value) -> str:
    """An answer or expected value as the contract writes it (`metrics.expected_text`)."""
    return metrics.expected_text(value)


@register.filter
def version_status(value: str) -> str:
    """A version status as people read it: `in review`, `changes requested`."""
    return str(dict(Version.Status.choices).get(value, value))


@register.filter
def ago(moment: datetime | None) -> str:
    """`just now` under a minute, else the largest unit: `3 minutes ago`, `2 days ago`."""
    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment, depth=1)} ago"


def _issues_html(issues, accept_url: str = "") -> SafeString:
    """The errors and warnings of a slot; with `accept_url` (the page lets its reader accept
    lints), each warning about a question links to accepting it with a reason."""
    return format_html_join(
        "",
        '<p class="issue {}" data-code="{}"><span class="badge">{}</span> {}{}</p>',
        (
            (
                kind,
                issue.code,
                kind,
                code(issue.message),
                _accept_link(issue, accept_url) if kind == "warning" and accept_url else "",
            )
            for kind, group in (("error", issues[0]), ("warning", issues[1]))
            for issue in group
        ),
    )


def _accept_link(issue, accept_url: str) -> SafeString | str:
    if not acceptable(issue):
        return ""
    query = urlencode({"question": issue.question, "code": issue.code, "path": issue.path})
    return format_html(
        ' <a class="lint-accept" href="{}?{}">Accept with a reason…</a>', accept_url, query
    )


@register.simple_tag(takes_context=True)
def slot(context, errors, warnings, card: str, part: str, row: str | None = None, oob=False):
    """The issues of one field: `errors`/`warnings` are dicts placed by `place_issues`; a
    page whose context names `lint_accept_url` links each warning to accepting it."""
    sid = slot_id(card, part, row) if card else "slot-document"
    found = (errors.get(sid, []), warnings.get(sid, []))
    return format_html(
        '<div id="{}" class="slot" aria-live="polite"{}>{}</div>',
        sid,
        mark_safe(' hx-swap-oob="true"') if oob else "",
        _issues_html(found, context.get("lint_accept_url", "")),
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
    from questions.engine import backends

    return not backends.calibrated(backend)


@register.filter
def answers_from(backend: str) -> str:
    """What decisions through this backend come from: "a chat model", "your own rules"."""
    from questions.engine import backends

    return backends.answers_from(backend)


@register.simple_tag
def percent(part, whole) -> str:
    """A pass rate of `part` out of `whole` with its 95 % interval and its n, as every page says
    it (`stats.rate_words`): `62% (36–82%, n = 13)`; `—` when whole is 0."""
    if not whole:
        return "—"
    return stats.rate_words(part, whole)


@register.filter
def share(value: float | None) -> str:
    """A share as a whole percentage: `5%`; `—` for None."""
    return "—" if value is None else f"{value:.0%}"


@register.simple_tag
def run_outcome(run) -> SafeString:
    """A run's status as a coloured word: red when failed, amber when some states failed."""
    outcome = run.outcome
    word = {"partial": "done, some failed"}.get(outcome, outcome)
    return format_html('<span class="run-status run-{}">{}</span>', outcome, word)


@register.simple_tag
def shown(qtype: str, answer, threshold: float = NOUL_THRESHOLD) -> str:
    """An answer as reports show it (`metrics.shown`): `billing 0.71`, `2 (2.05)`, `true 0.66`."""
    return metrics.shown(qtype, answer, threshold)


_MUTED_DASH = mark_safe('<span class="muted">—</span>')
_CHECKS = {
    True: mark_safe('<span class="ok" title="matches the expected answer">✓</span>'),
    False: mark_safe('<span class="error" title="misses the expected answer">✗</span>'),
    None: "",
}


@register.simple_tag
def result_rows(rows, compare_base: str) -> SafeString:
    """The run report's results rows (a hundred states × their questions a page), built here
    rather than in the template: the page's largest part, a few times faster this way."""
    out = []
    for r in rows:
        state = r.item.sample_state
        name = format_html(
            '<td>{} <small class="muted">r{}</small></td>', state.name, state.revision
        )
        cls = "fail" if r.passed is False else "pass" if r.passed else ""
        if r.question:
            expected = _MUTED_DASH if r.expected is None else answer(r.expected)
            link = f"{compare_base}{state.sample_state_id}#row-{state.sample_state_id}-{r.question}"
            out.append(
                format_html(
                    '<tr class="{}">{}<td><code>{}</code></td><td>{}</td><td>{}</td>'
                    '<td class="check">{}</td><td><a href="{}">compare</a></td></tr>',
                    cls,
                    name,
                    r.question,
                    expected,
                    r.answer,
                    _CHECKS[r.passed],
                    link,
                )
            )
        elif r.passed is None:  # not asked yet: a neutral mark, never a ✗
            out.append(
                format_html(
                    '<tr class="not-asked">{}<td colspan="3" class="muted">{} <small>({})'
                    '</small></td><td class="check"><span class="pending-mark" title="{}">'
                    "{}</span></td><td></td></tr>",
                    name,
                    r.answer,
                    r.error,
                    "not answered yet: neither right nor wrong",
                    r.error,
                )
            )
        else:
            error = f": {r.error[:159] + '…' if len(r.error) > 160 else r.error}" if r.error else ""
            attempts = r.item.attempts
            out.append(
                format_html(
                    '<tr class="{}">{}<td colspan="3" class="error">no answer{} <small '
                    'class="muted">({} attempt{})</small></td><td class="check">{}</td><td></td>'
                    "</tr>",
                    cls,
                    name,
                    error,
                    attempts,
                    "" if attempts == 1 else "s",
                    _CHECKS[False],
                )
            )
    return mark_safe("".join(out))  # every part above went through format_html


@register.filter
def audit_detail(detail) -> str:
    """An audit row's detail in words: `role: reviewer; sets: a, b`, what is empty left out."""
    if not isinstance(detail, dict):
        return ""

    def said(value) -> str:
        if isinstance(value, list | tuple):
            return ", ".join(said(v) for v in value) or "none"
        if isinstance(value, dict):
            return ", ".join(f"{k} {said(v)}" for k, v in value.items() if v not in (None, ""))
        return str(value)

    return "; ".join(f"{k}: {said(v)}" for k, v in detail.items() if v not in (None, "", [], {}))
