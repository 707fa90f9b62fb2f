"""The semantic diff between two question-set documents, per question and field (pure Python).

Questions are matched by id: added, removed, retyped or changed. Inside a choice, options are
matched by name; an option removed and another added with the same words is a rename. Score
levels are matched by position; the same levels in another order are a reorder (order is
meaning). Text changes carry word-level segments for an inline view.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from questions.core import spec

Segment = tuple[str, str]  # ("equal" | "insert" | "delete", text)


def inline(before: str, after: str) -> list[Segment]:
    """Word-level segments turning `before` into `after` (whitespace kept with its word)."""
    a, b = re.findall(r"\s*\S+|\s+", before), re.findall(r"\s*\S+|\s+", after)
    segments: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("equal", "".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            segments.append(("delete", "".join(a[i1:i2])))
        if op in ("insert", "replace"):
            segments.append(("insert", "".join(b[j1:j2])))
    return segments


def entry_words(entry: Any) -> str:
    """An entry as the words an author reads."""
    if entry is spec.ABSENT:
        return "(absent)"
    if entry is None:
        return "(no description: read by its name alone)"
    if isinstance(entry, str):
        return entry
    if spec.is_documented_entry(entry):
        lines = []
        if "what" in entry:
            lines.append(f"what: {entry['what']}")
        if "not_for" in entry:
            lines.append(f"not for: {entry['not_for']}")
        if "examples" in entry:
            examples = entry["examples"]
            shown = "; ".join(map(str, examples)) if isinstance(examples, list) else examples
            lines.append(f"examples: {shown}")
        return "\n".join(lines) or "{} (an empty description)"
    return json.dumps(entry, ensure_ascii=False)  # a structured form: all of it, as written


def value_words(value: Any) -> str:
    if value is spec.ABSENT:
        return "(absent)"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


@dataclass
class Change:
    """One field that differs: `label` says which, `kind` added / removed / changed / renamed /
    reordered, and `segments` the inline text change."""

    label: str
    kind: str
    segments: list[Segment] = field(default_factory=list)
    note: str = ""


@dataclass
class QuestionDiff:
    id: str
    status: str  # added | removed | retyped | changed | unchanged
    type_before: str | None = None
    type_after: str | None = None
    changes: list[Change] = field(default_factory=list)

    @property
    def type(self) -> str | None:
        return self.type_after or self.type_before


@dataclass
class DocumentDiff:
    questions: list[QuestionDiff]
    reordered: bool = False

    @property
    def changed(self) -> list[QuestionDiff]:
        return [q for q in self.questions if q.status != "unchanged"]

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for q in self.questions:
            counts[q.status] = counts.get(q.status, 0) + 1
        return counts


def _text_change(label: str, before: Any, after: Any, words=value_words) -> Change | None:
    if before == after and (before is spec.ABSENT) == (after is spec.ABSENT):
        return None
    if before is spec.ABSENT:
        return Change(label, "added", [("insert", words(after))])
    if after is spec.ABSENT:
        return Change(label, "removed", [("delete", words(before))])
    return Change(label, "changed", inline(words(before), words(after)))


def _get(question: dict, key: str) -> Any:
    return question.get(key, spec.ABSENT) if isinstance(question, dict) else spec.ABSENT


def _choice_changes(before: Any, after: Any) -> list[Change]:
    a = before if isinstance(before, dict) else {}
    b = after if isinstance(after, dict) else {}
    changes: list[Change] = []
    removed = [n for n in a if n not in b]
    added = [n for n in b if n not in a]
    renamed: dict[str, str] = {}
    for old in removed:
        words = spec.canonical_json(a[old])
        for new in added:
            if new not in renamed.values() and spec.canonical_json(b[new]) == words:
                renamed[old] = new
                break
    for name in a:
        if name in b:
            change = _text_change(f"option `{name}`", a[name], b[name], entry_words)
            if change:
                changes.append(change)
        elif name in renamed:
            changes.append(
                Change(
                    f"option `{name}`",
                    "renamed",
                    [("delete", name), ("insert", renamed[name])],
                    note="same words, new name",
                )
            )
        else:
            changes.append(
                Change(f"option `{name}`", "removed", [("delete", entry_words(a[name]))])
            )
    for name in added:
        if name not in renamed.values():
            changes.append(Change(f"option `{name}`", "added", [("insert", entry_words(b[name]))]))
    common_a = [n for n in a if n in b]
    common_b = [n for n in b if n in a]
    if common_a != common_b:
        changes.append(
            Change(
                "options",
                "reordered",
                inline(" ".join(common_a), " ".join(common_b)),
                note="declared order changed",
            )
        )
    return changes


def _score_changes(before: Any, after: Any) -> list[Change]:
    a = before if isinstance(before, list) else []
    b = after if isinstance(after, list) else []
    ka = [spec.canonical_json(e) for e in a]
    kb = [spec.canonical_json(e) for e in b]
    if ka != kb and sorted(ka) == sorted(kb):
        moves = []
        used: set[int] = set()
        for i, key in enumerate(ka):
            j = next(j for j, k in enumerate(kb) if k == key and j not in used)
            used.add(j)
            if i != j:
                moves.append(f"{i} → {j}")
        return [
            Change(
                "levels",
                "reordered",
                [("equal", ", ".join(moves))],
                note="order is meaning: the numbers of these levels changed",
            )
        ]
    changes: list[Change] = []
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            change = _text_change(f"level {j1 + k}", a[i1 + k], b[j1 + k], entry_words)
            if change:
                change.label = (
                    f"level {i1 + k}" if i1 + k == j1 + k else f"level {i1 + k} → {j1 + k}"
                )
                changes.append(change)
        for i in range(i1 + pairs, i2):
            changes.append(Change(f"level {i}", "removed", [("delete", entry_words(a[i]))]))
        for j in range(j1 + pairs, j2):
            changes.append(Change(f"level {j}", "added", [("insert", entry_words(b[j]))]))
    return changes


def _noul_mode(criteria: Any) -> str:
    if criteria is spec.ABSENT:
        return "absent"
    if criteria is None:
        return "null"
    if criteria == {}:
        return "empty {}"
    return "described"


def _noul_changes(before: Any, after: Any) -> list[Change]:
    mode_a, mode_b = _noul_mode(before), _noul_mode(after)
    changes: list[Change] = []
    if mode_a != mode_b:
        changes.append(Change("criteria", "changed", [("delete", mode_a), ("insert", mode_b)]))
    written = [k for k in after if k in spec.NOUL_CRITERIA_KEYS] if isinstance(after, dict) else []
    for case in [*written, *(k for k in spec.NOUL_CRITERIA_KEYS if k not in written)]:
        ea = before.get(case, spec.ABSENT) if isinstance(before, dict) else spec.ABSENT
        eb = after.get(case, spec.ABSENT) if isinstance(after, dict) else spec.ABSENT
        change = _text_change(f"the `{case}` case", ea, eb, entry_words)
        if change:
            changes.append(change)
    return changes


def question_diff(qid: str, before: Any, after: Any) -> QuestionDiff:
    if before is spec.ABSENT:
        return QuestionDiff(qid, "added", type_after=_get(after, "type") or None)
    if after is spec.ABSENT:
        return QuestionDiff(qid, "removed", type_before=_get(before, "type") or None)
    ta, tb = _get(before, "type"), _get(after, "type")
    diff = QuestionDiff(qid, "unchanged", ta or None, tb or None)
    if ta != tb:
        diff.status = "retyped"
        diff.changes.append(Change("type", "changed", [("delete", str(ta)), ("insert", str(tb))]))
        return diff
    instructions = _text_change(
        "instructions", _get(before, "instructions"), _get(after, "instructions")
    )
    if instructions:
        diff.changes.append(instructions)
    ca, cb = _get(before, "criteria"), _get(after, "criteria")
    if ta == "choice":
        diff.changes.extend(_choice_changes(ca, cb))
    elif ta == "score":
        diff.changes.extend(_score_changes(ca, cb))
    elif ta == "noul":
        diff.changes.extend(_noul_changes(ca, cb))
    if diff.changes:
        diff.status = "changed"
    return diff


@dataclass
class Content:
    """A question's whole content as a reviewer reads it: its instructions, and its options,
    levels or cases each with its description in words."""

    id: str
    type: str
    instructions: str
    entries: list[tuple[str, str]]
    note: str = ""


def question_content(qid: str, question: Any) -> Content:
    q = question if isinstance(question, dict) else {}
    qtype, criteria = str(q.get("type", "")), q.get("criteria", spec.ABSENT)
    instructions = q.get("instructions", spec.ABSENT)
    text = "" if instructions is spec.ABSENT or instructions is None else value_words(instructions)
    content = Content(qid, qtype, text, [])
    if qtype == "choice" and isinstance(criteria, dict):
        content.entries = [(name, entry_words(entry)) for name, entry in criteria.items()]
    elif qtype == "score" and isinstance(criteria, list):
        content.entries = [(f"level {i}", entry_words(entry)) for i, entry in enumerate(criteria)]
    elif qtype == "noul" and isinstance(criteria, dict) and criteria:
        content.entries = [  # in the author's order
            (case, entry_words(entry))
            for case, entry in criteria.items()
            if case in ("true", "false")
        ]
    elif qtype == "noul":
        content.note = "no criteria: the statement is read by its instructions alone"
    return content


def document_diff(before: dict[str, Any], after: dict[str, Any]) -> DocumentDiff:
    """Every question of both documents, in the order of `after` then the removed ones."""
    ids = list(after) + [qid for qid in before if qid not in after]
    questions = [
        question_diff(qid, before.get(qid, spec.ABSENT), after.get(qid, spec.ABSENT)) for qid in ids
    ]
    common_a = [q for q in before if q in after]
    common_b = [q for q in after if q in before]
    return DocumentDiff(questions, reordered=common_a != common_b)


def sides(segments: list[Segment]) -> tuple[str, str]:
    """The text before and after a change, from its inline segments."""
    before = "".join(text for kind, text in segments if kind != "insert")
    after = "".join(text for kind, text in segments if kind != "delete")
    return before, after


def word_diff(segments: list[Segment]) -> str:
    """A change in one line of text, as `git diff --word-diff=plain` marks it: `[-gone-]` and
    `{+new+}` in the words that stay."""
    marks = {"equal": "{}", "delete": "[-{}-]", "insert": "{{+{}+}}"}
    return "".join(marks[kind].format(text) for kind, text in segments)


def as_json(result: DocumentDiff) -> dict[str, Any]:
    """The diff as `questions diff --json` prints it: a summary, whether the common questions
    moved, and every question with its changes (the text before and after each)."""
    questions = []
    for q in result.questions:
        changes = []
        for change in q.changes:
            before, after = sides(change.segments)
            out = {"label": change.label, "kind": change.kind, "before": before, "after": after}
            if change.note:
                out["note"] = change.note
            changes.append(out)
        questions.append(
            {
                "id": q.id,
                "status": q.status,
                "type_before": q.type_before,
                "type_after": q.type_after,
                "changes": changes,
            }
        )
    return {"summary": result.summary, "reordered": result.reordered, "questions": questions}
