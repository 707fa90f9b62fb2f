"""One owner per fact: the templates name statuses, run defaults and label rules through the
code that owns them, never as literals of their own."""

import re
from pathlib import Path

import pytest

from questions import context_processors
from questions.core import answers, metrics
from questions.models import BatchRun, Label
from questions.services import batches

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))
CODE = sorted(p for p in (ROOT / "questions").rglob("*.py") if "migrations" not in p.parts)


def _lines_matching(pattern: str, paths=TEMPLATES) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.name}:{number}")
    return found


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        ("the run form's default concurrency", r'name="concurrency" value="[0-9]'),
        ("the run form's largest concurrency", r'name="concurrency"[^>]* max="[0-9]'),
        ("the run form's default threshold", r'name="threshold" value="[0-9]'),
        ("the label name pattern", r'pattern="\[a-z0-9_'),
        ("a suggested label", r'<option value="(production|staging)">'),
        (
            "a version status compared as a literal",
            r"status\s*==\s*\"(draft|kept|in_review|approved|changes_requested)\"",
        ),
    ],
)
def test_no_template_restates_a_fact_the_code_owns(what, pattern):
    assert _lines_matching(pattern) == [], what


@pytest.mark.parametrize(
    ("what", "pattern", "owners"),
    [
        ("a default noul threshold", r"threshold: float = 0\.5", ()),
        (
            "the baseline label",
            r'"production"',
            ("questions/models/sets.py", "questions/core/ingest.py"),
        ),
        ("a digit check of its own", r"\.isdigit\(\)", ("questions/core/numbers.py",)),
        (
            "a run default of its own",
            r"(CONCURRENCY|THRESHOLD) = [0-9]",
            ("questions/models/runs.py",),
        ),
    ],
)
def test_no_module_restates_a_fact_another_owns(what, pattern, owners):
    # `"production"` is two facts with two owners: the baseline label and a state's source
    found = _lines_matching(
        pattern, [p for p in CODE if p.relative_to(ROOT).as_posix() not in owners]
    )
    assert found == [], what


def test_the_owners_are_what_everything_else_uses():
    assert BatchRun.DEFAULT_THRESHOLD == answers.NOUL_THRESHOLD == batches.DEFAULT_THRESHOLD
    assert BatchRun._meta.get_field("threshold").default == answers.NOUL_THRESHOLD
    assert BatchRun._meta.get_field("concurrency").default == BatchRun.DEFAULT_CONCURRENCY
    assert metrics.report.__defaults__ == (answers.NOUL_THRESHOLD,)
    assert context_processors.RUN_DEFAULTS["max_concurrency"] == batches.MAX_CONCURRENCY
    assert re.fullmatch(Label.NAME_PATTERN, "release-2.1_a") and Label.BASELINE in Label.SUGGESTED
