"""The whole check of a question-set document: the contract (`spec`), then the semantic lints
(`lints`) on the questions that parsed. Every caller that shows a document's warnings asks here;
`spec.validate` alone is the contract and its structural lints.

`spec` knows no semantic lint and `lints` reads `spec`'s parsed questions: this module is the
one that knows both, so neither imports the other back. A finding accepted with a reason is named
by its place, rule and words (`finding_key`); `split_accepted` sets those apart from the open
warnings."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from questions.core import lints as semantic
from questions.core import spec


def validate(
    value: Any,
    *,
    limits: spec.Limits,
    lints: bool = True,
    sample_states: Sequence[Any] | semantic.StatePaths | None = None,
) -> spec.Validation:
    """`spec.validate`, with the semantic lints among its warnings when `lints`. `sample_states`
    (the set's states, or a `lints.StatePaths` of them) let the lints check the state paths the
    questions name in backticks; a body's own state is one of them; without any that lint does
    not run. Never raises for a JSON value."""

    def lint(questions: dict[str, spec.Question], state: Any, ids: list[str]) -> list[spec.Issue]:
        states = sample_states
        if state is not spec.ABSENT and not isinstance(states, semantic.StatePaths):
            states = [*(states or ()), state]  # a body's own state is one too
        return semantic.check(questions, sample_states=states, ids=ids)

    return spec.validate(value, limits=limits, lints=lints, semantic=lint if lints else None)


#: a finding as an acceptance names it: (path, code, the words that fired)
FindingKey = tuple[str, str, str]


def finding_words(issue: spec.Issue) -> str:
    """The words a finding fired on (its `actual`) as text: the same finding gives the same
    text, whatever the run — a string as it is, anything else as canonical JSON."""
    if issue.actual is None:
        return ""
    if isinstance(issue.actual, str):
        return issue.actual
    try:
        return json.dumps(issue.actual, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(issue.actual)


def finding_key(issue: spec.Issue) -> FindingKey:
    return (issue.path, issue.code, finding_words(issue))


def acceptable(issue: spec.Issue) -> bool:
    """Whether a finding can be accepted: a warning about one question (never an error)."""
    return bool(issue.question) and len(issue.loc) >= 2 and issue.loc[0] == "questions"


def split_accepted(
    warnings: Iterable[spec.Issue], accepted: Collection[FindingKey]
) -> tuple[list[spec.Issue], list[spec.Issue]]:
    """(the warnings still open, those accepted): a warning is accepted when its place, rule
    and words are those of an acceptance in `accepted` (`finding_key`)."""
    still_open: list[spec.Issue] = []
    taken: list[spec.Issue] = []
    for issue in warnings:
        (taken if accepted and finding_key(issue) in accepted else still_open).append(issue)
    return still_open, taken
