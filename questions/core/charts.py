"""Server-rendered SVG bar charts of checked answers, with the numbers as text.

Readable without JavaScript and by a screen reader: every chart has a title and a description,
and every bar its label and value as text. Pure Python; values are escaped here.
"""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from questions.core import metrics, spec
from questions.core.answers import NOUL_THRESHOLD

#: a bar chart fills its card's width and draws its text at the card's text size: lengths are
#: in em and percent, never in a viewBox that would scale the text with the chart
ROW_EM = 1.9  # a row: its label and value on the bar, with a gap
DENSE_ROW_EM = 1.25  # many options: thinner rows, still one row each
DENSE_ROWS = 40
#: a label longer than this is shortened with an ellipsis (its whole text is in the row's
#: <title> and the chart's <desc>); the start — a level's number — always stays. At this
#: length label and value fit side by side at a phone's width (the browser test checks)
LABEL_CHARS = 34


def _pct(p: float) -> str:
    return f"{p:.2f}"


def legend_text(value: Any) -> str:
    """A legend value as a label: a provider echoes a structured level as it was asked (an
    object or an array), which reads as its words, or else as its JSON."""
    if value is None or isinstance(value, str):
        return value or ""
    return spec.entry_text(value) or json.dumps(value, ensure_ascii=False)


def _label(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _em(value: float) -> str:
    return f"{value:.2f}em"


#: the marks of a score's bars when the level its score reads as is not the most likely one
READS_AS_MARK, LIKELY_MARK = "▶", "◆"


def _bars(
    rows: list[tuple[str, float, bool]], title: str, desc: str, likely: int | None = None
) -> SafeString:
    """Horizontal bars, one per (label, probability, marked) row, in the given order: the
    label at the bar's start, the value at its end, over a track the width of the card. Row
    `likely`, when given and not the marked one, is marked apart as the most likely."""
    dense = len(rows) > DENSE_ROWS
    row = DENSE_ROW_EM if dense else ROW_EM
    parts = [
        f'<svg class="chart bars{" dense" if dense else ""}" role="img" width="100%" '
        f'height="{_em(row * len(rows) + 0.2)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>",
    ]
    for i, (label, p, marked) in enumerate(rows):
        top = 0.1 + i * row
        width = max(0.0, min(1.0, p)) * 100
        cls = "bar chosen" if marked else "bar"
        mark = f"{READS_AS_MARK} " if marked else ""
        value = _pct(p)
        if likely is not None and i == likely and not marked:
            mark, value, cls = f"{LIKELY_MARK} ", f"{LIKELY_MARK} {value}", "bar likely"
        elif likely is not None and marked:
            value = f"{READS_AS_MARK} {value}"
        base = _em(top + row * 0.66)
        parts.append(
            f'<g class="row{" chosen" if marked else ""}{" likely" if "likely" in cls else ""}">'
            f'<rect class="track" x="0" y="{_em(top + 0.05)}" width="100%" '
            f'height="{_em(row - 0.25)}" rx="3"/>'
            f'<rect class="{cls}" x="0" y="{_em(top + 0.05)}" width="{width:.1f}%" '
            f'height="{_em(row - 0.25)}" rx="3"><title>{escape(label)}: {_pct(p)}</title></rect>'
            f'<text x="0.4em" y="{base}">{escape(mark + _label(label))}</text>'
            f'<text class="value" x="100%" dx="-0.4em" y="{base}" text-anchor="end">'
            f"{escape(value)}</text></g>"
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
        (
            f"{i} {legend_text(legend.get(str(i)))}".strip(),
            float(probabilities[str(i)]),
            i == nearest,
        )
        for i in range(levels)
        if str(i) in probabilities  # a wire that lets a level be missing flags it
    ]
    desc = f"score {score:.2f} of 0 to {levels - 1}; " + ", ".join(
        f"level {r[0]} {_pct(r[1])}" for r in rows
    )
    # the score is an expectation: the level it reads as (the one checked) can be an unlikely
    # one (0.75 between a 0.64 level 0 and a 0.32 level 2); the most likely is marked apart
    likely = max(range(len(rows)), key=lambda i: rows[i][1]) if rows else None
    if likely is not None and any(marked and p >= rows[likely][1] for _, p, marked in rows):
        likely = None  # the level it reads as is (one of) the most likely: one mark says it
    if likely is not None:
        desc += f"; reads as the nearest level, the most likely is {rows[likely][0]}"
    bars = _bars(rows, f"{qid}: score", desc, likely=likely)

    # the axis 0 … n−1 across the card, with the score marked and written above its marker;
    # the end labels are anchored inwards so that none pokes out of the chart
    def anchor(fraction: float) -> str:
        return "start" if fraction < 0.12 else "end" if fraction > 0.88 else "middle"

    at = max(0.0, min(1.0, score / (levels - 1)))
    ticks = "".join(
        f'<line x1="{100 * i / (levels - 1):.2f}%" y1="1.45em" x2="{100 * i / (levels - 1):.2f}%" '
        f'y2="1.95em"/><text x="{100 * i / (levels - 1):.2f}%" y="3.0em" '
        f'text-anchor="{anchor(i / (levels - 1))}">{i}</text>'
        for i in range(levels)
    )
    axis = (
        f'<svg class="chart axis" role="img" width="100%" height="3.3em" '
        f'xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(qid)}: score {score:.2f} on the 0 to {levels - 1} axis</title>"
        f'<line class="axis-line" x1="0" y1="1.7em" x2="100%" y2="1.7em"/>'
        f'<g class="ticks">{ticks}</g>'
        f'<circle class="marker" cx="{100 * at:.2f}%" cy="1.7em" r="0.35em"/>'
        f'<text class="value" x="{100 * at:.2f}%" y="1.0em" text-anchor="{anchor(at)}">'
        f"score {score:.2f}</text></svg>"
    )
    key = ""
    if likely is not None:
        key = (
            f'<p class="chart-key"><span>{READS_AS_MARK} level {nearest}: the level score '
            f"{score:.2f} reads as (what is checked)</span> <span>{LIKELY_MARK} level "
            f"{escape(rows[likely][0].split(' ', 1)[0])}: the most likely "
            f"({_pct(rows[likely][1])})</span></p>"
        )
    return mark_safe(bars + axis + key)  # escaped above


def noul_bar_chart(
    qid: str, answer: dict[str, Any], threshold: float = NOUL_THRESHOLD
) -> SafeString:
    """P(true) against P(false), the side the answer reads as marked."""
    p = float(answer["noul"])
    rows = [("P(true)", p, p >= threshold), ("P(false)", 1 - p, p < threshold)]
    return _bars(rows, f"{qid}: noul", f"P(true) {_pct(p)}, P(false) {_pct(1 - p)}")


def chart_for(question, answer: dict[str, Any]) -> SafeString:
    if question.type == "choice":
        return choice_bar_chart(question.id, answer, question.option_names)
    if question.type == "score":
        return score_bar_chart(question.id, answer, question.level_count)
    return noul_bar_chart(question.id, answer)


def calibration_figure(name: str, what: str, calibration) -> dict[str, Any]:
    """A reliability diagram of a run's answers, or why there is none: a bin's observed rate
    says something only over `metrics.SPARSE_BIN` answers or more, so bins with fewer are left
    out, and with none left there is no diagram."""
    full = [b for b in calibration.bins if b.count >= metrics.SPARSE_BIN]
    figure: dict[str, Any] = {"name": name, "what": what, "calibration": calibration}
    if not calibration.count:
        figure["reason"] = f"No {name} answer has an expected answer to check it against."
    elif not full:
        most = max(b.count for b in calibration.bins)
        figure["reason"] = (
            f"Not enough answers: a bin of the diagram needs {metrics.SPARSE_BIN} or more to "
            f"say something, and this run's {calibration.count} {name} answer"
            f"{'s' if calibration.count != 1 else ''} hold at most {most} in one bin."
        )
    else:
        figure["svg"] = reliability_diagram(f"{name}: {what}", calibration)
        figure["left_out"] = sum(
            b.count for b in calibration.bins if 0 < b.count < metrics.SPARSE_BIN
        )
    return figure


def _count(n: int) -> str:
    """A bin's count in at most four characters, so that neighbours never run together:
    `987`, `1.2k`, `12k`."""
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 10_000 else f"{n // 1000}k"


def reliability_diagram(title: str, calibration) -> SafeString:
    """Observed frequency against mean predicted probability per bin, with the diagonal; only
    bins with `metrics.SPARSE_BIN` answers or more (a bin observed at 0 shows as a line on the
    floor). Drawn in a 400-unit square scaled to the card, its text 16 units."""
    size, pad = 400, 48
    inner = size - 2 * pad
    shown = [b for b in calibration.bins if b.count >= metrics.SPARSE_BIN]
    parts = [
        f'<svg class="chart reliability" role="img" viewBox="0 0 {size} {size}" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>",
        escape(
            "; ".join(
                f"{b.low:.1f}-{b.high:.1f}: {b.count} answers, mean p {b.confidence:.2f}, "
                f"observed {b.frequency:.2f}"
                for b in shown
            )
            or "no bin with enough answers"
        ),
        "</desc>",
        f'<rect class="track" x="{pad}" y="{pad}" width="{inner}" height="{inner}"/>',
        f'<line class="diagonal" x1="{pad}" y1="{pad + inner}" x2="{pad + inner}" y2="{pad}"/>',
    ]
    width = inner / len(calibration.bins)
    for b in shown:
        i = calibration.bins.index(b)
        h = max(2.0, b.frequency * inner)
        x = pad + i * width
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{pad + inner - h:.1f}" '
            f'width="{width - 2:.1f}" height="{h:.1f}">'
            f"<title>{b.low:.1f}–{b.high:.1f}: {b.count} answers, observed "
            f"{b.frequency:.2f}</title></rect>"
            f'<text x="{x + width / 2:.1f}" y="{pad - 8}" text-anchor="middle" font-size="11">'
            f"{_count(b.count)}</text>"
        )
    parts.append(
        f'<text x="{pad + inner / 2}" y="{size - 8}" text-anchor="middle" font-size="16">'
        f'predicted p</text><text x="18" y="{pad + inner / 2}" font-size="16" '
        f'transform="rotate(-90 18 {pad + inner / 2})" text-anchor="middle">observed</text>'
        f'<text x="{pad}" y="{pad + inner + 18}" font-size="15">0</text>'
        f'<text x="{pad + inner}" y="{pad + inner + 18}" font-size="15" text-anchor="end">1'
        "</text></svg>"
    )
    return mark_safe("".join(parts))  # every text above is escaped or a number


#: the text size of a threshold chart, in its own units (see `threshold_chart`)
CHART_TEXT = 14

#: the curves of a threshold chart: (field, label, dash pattern), told apart without colour too
CURVES = (
    ("precision", "precision", ""),
    ("recall", "recall", "6 3"),
    ("coverage", "coverage", "2 3"),
)


def threshold_chart(title: str, points: list, chosen=None) -> SafeString:
    """Precision, recall and coverage against the threshold (0…1), with the chosen point marked
    by a vertical line and a dot on each curve; the description lists the chosen point's figures.
    `points` are `thresholds.CurvePoint`s in threshold order; `chosen` is one, or None."""
    # text sizes are in the chart's own units: at the narrowest the chart is drawn (a phone's
    # column, ~330 px for its 420) a 14-unit label is still 11 px
    width, height, pad, below = 420, 290, 36, 80
    inner_w, inner_h = width - 2 * pad, height - pad - below

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
            f'<text x="{x(chosen.threshold):.1f}" y="{pad - 8}" text-anchor="middle" '
            f'font-size="{CHART_TEXT}">chosen {chosen.threshold:.2f}</text>'
        )
    for i, (field, label, dash) in enumerate(CURVES):
        lx = pad + i * 128
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line class="curve curve-{field}" x1="{lx}" y1="{height - 12}" x2="{lx + 22}" '
            f'y2="{height - 12}"{dashes}/><text x="{lx + 27}" y="{height - 7}" '
            f'font-size="{CHART_TEXT}">{label}</text>'
        )
    bottom = pad + inner_h
    parts.append(
        f'<text x="{pad}" y="{bottom + 17}" font-size="{CHART_TEXT}">0</text>'
        f'<text x="{pad + inner_w}" y="{bottom + 17}" font-size="{CHART_TEXT}" '
        f'text-anchor="end">1</text>'
        f'<text x="{pad + inner_w / 2}" y="{bottom + 36}" font-size="{CHART_TEXT}" '
        f'text-anchor="middle" class="axis-title">threshold</text>'
        f'<text x="{pad - 5}" y="{pad + 5}" font-size="{CHART_TEXT}" text-anchor="end">1</text>'
        f'<text x="{pad - 5}" y="{bottom}" font-size="{CHART_TEXT}" text-anchor="end">0</text>'
        "</svg>"
    )
    return mark_safe("".join(parts))  # every text above is escaped or a number


#: how many colours a share bar's segments take in turn (a value's place among its question's)
SHARE_COLOURS = 6


def share_bar(title: str, counts: list[tuple[str, int]], places: dict[str, int]) -> SafeString:
    """One stacked bar the card's width: each (value, count) a segment as wide as its share, in
    the colour of the value's place in `places` (its question's answers in declared order); the
    counts and shares in the bar's description and each segment's title. Empty: a bare track."""
    total = sum(n for _, n in counts)
    parts = [
        '<svg class="chart share" role="img" width="100%" height="1.1em" '
        'xmlns="http://www.w3.org/2000/svg">',
        '<rect class="track" x="0" y="0" width="100%" height="1.1em" rx="3"/>',
    ]
    said, start = [], 0.0
    for value, n in counts:
        if not n:
            continue
        share = n / total
        colour = places.get(value, 0) % SHARE_COLOURS
        parts.append(
            f'<rect class="share-part v{colour}" x="{100 * start:.2f}%" y="0" '
            f'width="{100 * share:.2f}%" height="1.1em">'
            f"<title>{escape(value)}: {n} ({share:.0%})</title></rect>"
        )
        said.append(f"{value} {n} ({share:.0%})")
        start += share
    desc = ", ".join(said) if said else "nothing"
    parts.insert(1, f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>")
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above is escaped
