"""The whole check of a question-set document: the contract (`spec`), then the semantic lints
(`lints`) on the questions that parsed. Every caller that shows a document's warnings asks here;
`spec.validate` alone is the contract and its structural lints.

`spec` knows no semantic lint and `lints` reads `spec`'s parsed questions: this module is the
one that knows both, so neither imports the other back."""

from __future__ import annotations

from collections.abc import Sequence
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
