"""One owner per fact: the templates name statuses, run defaults and label rules through the
code that owns them, never as literals of their own."""

import re
from pathlib import Path

import pytest

TEMPLATES = sorted((Path(__file__).resolve().parent.parent / "templates").rglob("*.html"))


def _lines_matching(pattern: str) -> list[str]:
    found = []
    for path in TEMPLATES:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.name}:{number}")
    return found


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        (
            "a version status compared as a literal",
            r"status\s*==\s*\"(draft|kept|in_review|approved|changes_requested)\"",
        ),
    ],
)
def test_no_template_restates_a_fact_the_code_owns(what, pattern):
    assert _lines_matching(pattern) == [], what
