"""Server-rendered SVG bar charts of checked answers, with the numbers as text (DESIGN.md §5).

Readable without JavaScript and by a screen reader: every chart has a title and a description,
and every bar its label and value as text. Pure Python; values are escaped here.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from questions import metrics

WIDTH = 560
LABEL_W = 190
VALUE_W = 56
BAR_W = WIDTH - LABEL_W - VALUE_W - 8
ROW_H = 22
DENSE_ROW_H = 13  # many options: thinner rows, smaller text, still one row each


def _pct(p: float) -> str:
    return f"{p:.2f}"


def _label(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bars(rows: list[tuple[str, float, bool]], title: str, desc: str) -> SafeString:
    """Horizontal bars, one per (label, probability, marked) row, in the given order."""
    row_h = ROW_H if len(rows) <= 40 else DENSE_ROW_H
    font = 12 if row_h == ROW_H else 9
    height = row_h * len(rows) + 6
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>",
    ]
    for i, (label, p, marked) in enumerate(rows):
        y = 3 + i * row_h
        w = max(0.0, min(1.0, p)) * BAR_W
        cls = "bar chosen" if marked else "bar"
        mark = "▶ " if marked else ""
        parts.append(
            f'<g class="row{" chosen" if marked else ""}">'
            f'<text x="{LABEL_W - 6}" y="{y + row_h * 0.7:.1f}" text-anchor="end" '
            f'font-size="{font}">{escape(mark + _label(label))}</text>'
            f'<rect class="track" x="{LABEL_W}" y="{y + 2}" width="{BAR_W}" '
            f'height="{row_h - 4}" rx="2"/>'
            f'<rect class="{cls}" x="{LABEL_W}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" '
            f'rx="2"><title>{escape(label)}: {_pct(p)}</title></rect>'
            f'<text class="value" x="{WIDTH - 4}" y="{y + row_h * 0.7:.1f}" text-anchor="end" '
            f'font-size="{font}">{_pct(p)}</text></g>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above is escaped


def choice_bar_chart(qid: str, answer: dict[str, Any], options: list[str]) -> SafeString:
    """A bar per declared option in declared order, then any option the answer added (a wire
    that lets them through flags them); the chosen one marked. A missing option has no bar."""
    probabilities = answer["probabilities"]
    names = [n for n in options if n in probabilities] + [
        n for n in probabilities if n not in options
    ]
    rows = [(name, float(probabilities[name]), name == answer["choice"]) for name in names]
    desc = f"chose {answer['choice']} with confidence {_pct(answer['confidence'])}; " + ", ".join(
        f"{name} {_pct(p)}" for name, p, _ in rows
    )
    return _bars(rows, f"{qid}: choice", desc)


def score_bar_chart(qid: str, answer: dict[str, Any], levels: int) -> SafeString:
    """A bar per level with its legend, and the fractional score on the 0…n−1 axis."""
    probabilities, legend = answer["probabilities"], answer.get("legend") or {}
    score = float(answer["score"])
    nearest = min(levels - 1, max(0, metrics.nearest_level(score)))
    rows = [
        (f"{i} {legend.get(str(i), '')}".strip(), float(probabilities[str(i)]), i == nearest)
        for i in range(levels)
        if str(i) in probabilities  # a wire that lets a level be missing flags it
    ]
    desc = f"score {score:.2f} of 0 to {levels - 1}; " + ", ".join(
        f"level {r[0]} {_pct(r[1])}" for r in rows
    )
    bars = _bars(rows, f"{qid}: score", desc)
    # the axis 0 … n−1 with the score marked
    height = 34
    scale = BAR_W / (levels - 1)
    x = LABEL_W + score * scale
    ticks = "".join(
        f'<line x1="{LABEL_W + i * scale:.1f}" y1="12" x2="{LABEL_W + i * scale:.1f}" y2="18"/>'
        f'<text x="{LABEL_W + i * scale:.1f}" y="30" text-anchor="middle" font-size="10">{i}'
        "</text>"
        for i in range(levels)
    )
    axis = (
        f'<svg class="chart axis" role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(qid)}: score {score:.2f} on the 0 to {levels - 1} axis</title>"
        f'<text x="{LABEL_W - 6}" y="18" text-anchor="end" font-size="12">score</text>'
        f'<line class="axis-line" x1="{LABEL_W}" y1="15" x2="{LABEL_W + BAR_W}" y2="15"/>'
        f'<g class="ticks">{ticks}</g>'
        f'<path class="marker" d="M{x:.1f} 15 l-5 -9 h10 z"/>'
        f'<text class="value" x="{WIDTH - 4}" y="18" text-anchor="end" font-size="12">'
        f"{score:.2f}</text></svg>"
    )
    return mark_safe(bars + axis)  # escaped above


def noul_bar_chart(qid: str, answer: dict[str, Any]) -> SafeString:
    """P(true) as one bar."""
    p = float(answer["noul"])
    return _bars([("P(true)", p, p >= 0.5)], f"{qid}: noul", f"P(true) {_pct(p)}")


def chart_for(question, answer: dict[str, Any]) -> SafeString:
    if question.type == "choice":
        return choice_bar_chart(question.id, answer, question.option_names)
    if question.type == "score":
        return score_bar_chart(question.id, answer, question.level_count)
    return noul_bar_chart(question.id, answer)


def reliability_diagram(title: str, calibration) -> SafeString:
    """Observed frequency against mean predicted probability per bin, with the diagonal;
    sparse bins (few answers) are drawn hollow and say so."""
    size, pad = 240, 34
    inner = size - 2 * pad
    parts = [
        f'<svg class="chart reliability" role="img" viewBox="0 0 {size} {size}" width="{size}" '
        f'height="{size}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>",
        escape(
            "; ".join(
                f"{b.low:.1f}-{b.high:.1f}: {b.count} answers, mean p {b.confidence:.2f}, "
                f"observed {b.frequency:.2f}{' (sparse)' if b.sparse else ''}"
                for b in calibration.bins
                if b.count
            )
            or "no answers"
        ),
        "</desc>",
        f'<rect class="track" x="{pad}" y="{pad}" width="{inner}" height="{inner}"/>',
        f'<line class="diagonal" x1="{pad}" y1="{pad + inner}" x2="{pad + inner}" y2="{pad}"/>',
    ]
    width = inner / len(calibration.bins)
    for i, b in enumerate(calibration.bins):
        if not b.count:
            continue
        h = b.frequency * inner
        x = pad + i * width
        cls = "bar sparse" if b.sparse else "bar"
        parts.append(
            f'<rect class="{cls}" x="{x + 1:.1f}" y="{pad + inner - h:.1f}" '
            f'width="{width - 2:.1f}" height="{h:.1f}">'
            f"<title>{b.low:.1f}–{b.high:.1f}: {b.count} answers, observed "
            f"{b.frequency:.2f}{' (sparse)' if b.sparse else ''}</title></rect>"
            f'<text x="{x + width / 2:.1f}" y="{pad - 4}" text-anchor="middle" font-size="8">'
            f"{b.count}{'*' if b.sparse else ''}</text>"
        )
    parts.append(
        f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" font-size="10">predicted p'
        f'</text><text x="10" y="{size / 2}" font-size="10" transform="rotate(-90 10 '
        f'{size / 2})" text-anchor="middle">observed</text>'
        f'<text x="{pad}" y="{pad + inner + 12}" font-size="9">0</text>'
        f'<text x="{pad + inner}" y="{pad + inner + 12}" font-size="9" text-anchor="end">1</text>'
        "</svg>"
    )
    return mark_safe("".join(parts))  # every text above is escaped or a number


#: the curves of a threshold chart: (field, label, dash pattern), told apart without colour too
CURVES = (
    ("precision", "precision", ""),
    ("recall", "recall", "6 3"),
    ("coverage", "coverage", "2 3"),
)


def threshold_chart(title: str, points: list, chosen=None) -> SafeString:
    """Precision, recall and coverage against the threshold (0…1), with the chosen point marked
    by a vertical line and a dot on each curve; the description lists the chosen point's figures.
    `points` are `metrics.CurvePoint`s in threshold order; `chosen` is one, or None."""
    width, height, pad = 420, 240, 36
    inner_w, inner_h = width - 2 * pad, height - 2 * pad

    def x(t: float) -> float:
        return pad + t * inner_w

    def y(v: float) -> float:
        return pad + (1 - v) * inner_h

    def fmt(v: float | None) -> str:
        return "—" if v is None else f"{v:.2f}"

    desc = "no labelled answers"
    if points and chosen is None:
        desc = (
            f"{len(points)} thresholds from {points[0].threshold:.2f} to "
            f"{points[-1].threshold:.2f}; no advice chosen yet"
        )
    if chosen is not None:
        desc = (
            f"at {chosen.threshold:.2f}: precision {fmt(chosen.precision)}, recall "
            f"{fmt(chosen.recall)}, coverage {chosen.coverage:.2f} ({chosen.kept} kept)"
        )
    parts = [
        f'<svg class="chart threshold-curve" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>",
        f'<rect class="track" x="{pad}" y="{pad}" width="{inner_w}" height="{inner_h}"/>',
    ]
    for field, _, dash in CURVES:
        line = " ".join(
            f"{x(p.threshold):.1f},{y(getattr(p, field)):.1f}"
            for p in points
            if getattr(p, field) is not None
        )
        if line:
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(f'<polyline class="curve curve-{field}" points="{line}"{dashes}/>')
    if chosen is not None:
        parts.append(
            f'<line class="chosen" x1="{x(chosen.threshold):.1f}" y1="{pad}" '
            f'x2="{x(chosen.threshold):.1f}" y2="{pad + inner_h}"/>'
        )
        for field, label, _ in CURVES:
            value = getattr(chosen, field)
            if value is not None:
                parts.append(
                    f'<circle class="marker curve-{field}" cx="{x(chosen.threshold):.1f}" '
                    f'cy="{y(value):.1f}" r="4"><title>{label} {value:.2f}</title></circle>'
                )
        parts.append(
            f'<text x="{x(chosen.threshold):.1f}" y="{pad - 6}" text-anchor="middle" '
            f'font-size="10">chosen {chosen.threshold:.2f}</text>'
        )
    for i, (field, label, dash) in enumerate(CURVES):
        lx = pad + i * 110
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line class="curve curve-{field}" x1="{lx}" y1="{height - 8}" x2="{lx + 22}" '
            f'y2="{height - 8}"{dashes}/><text x="{lx + 26}" y="{height - 4}" '
            f'font-size="10">{label}</text>'
        )
    parts.append(
        f'<text x="{pad}" y="{pad + inner_h + 12}" font-size="9">0</text>'
        f'<text x="{pad + inner_w}" y="{pad + inner_h + 12}" font-size="9" text-anchor="end">1'
        f'</text><text x="{pad - 4}" y="{pad + 4}" font-size="9" text-anchor="end">1</text>'
        f'<text x="{pad - 4}" y="{pad + inner_h}" font-size="9" text-anchor="end">0</text>'
        "</svg>"
    )
    return mark_safe("".join(parts))  # every text above is escaped or a number
