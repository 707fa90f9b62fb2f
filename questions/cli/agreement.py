"""`questions agreement`: the subcommand that prints how far a set's labellers agree, per
question of the version its states are labelled for — the statistic (Cohen's κ or
Krippendorff's α), its value, 95 % interval and n; each labeller and the model against the
settled answers; the states settled, disputed and ambiguous (`selectors.agreement` reads it;
this module only prints it)."""

from __future__ import annotations

from typing import Any

from questions.cli.base import EXIT_OK, Console, add_json, add_set
from questions.core import agreement
from questions.models import QuestionSet
from questions.selectors.agreement import set_agreement


def add_parsers(sub: Any) -> None:
    """The `agreement` subcommand."""
    parser = sub.add_parser(
        "agreement",
        help="per question: the labellers' agreement with its interval, and the model's",
        description="Print, per question of the version SLUG's states are labelled for, how "
        "far its labellers agree: Cohen's κ with two labellers of a choice or a noul, "
        "Krippendorff's α with more (ordinal for a score question), each with its bootstrap "
        "95 % interval and n; each labeller's and the model's agreement with the settled "
        "answers (the model: the version's newest finished run, read with the labellers' "
        "statistic); and how many states are settled, disputed and ambiguous. Reads labels "
        "and recorded answers only.",
    )
    add_set(parser)
    add_json(parser, 'print {"set", "version", "questions": [...]}')
    parser.set_defaults(handler=do_agreement)


def question_lines(found: agreement.QuestionAgreement) -> list[str]:
    """One question's agreement as the text output prints it."""
    figure = found.labellers
    lines = [
        f"{found.question} ({found.qtype}): {found.summary()}",
        f"  labellers: {figure.name}: {figure.words()}",
    ]
    lines += [f"  {m.who}: {m.words()}" for m in found.per_labeller]
    if found.model is None:
        lines.append("  the model: no finished run of this version to read")
    else:
        lines.append(
            f"  the model against the settled answers: {found.model.words()}; "
            f"{found.model_match.words()}"
        )
    return lines


def do_agreement(cli: Console, *, slug: str, json: bool, **_: Any) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    found = set_agreement(question_set)
    if json:
        cli.emit_json(found.as_dict())
        return EXIT_OK
    if found.version is None:
        cli.stdout.write(f"{slug}: {found.why}")
        return EXIT_OK
    model = (
        f"the model: run {found.run.pk} ({found.run.backend})"
        if found.run is not None
        else "no finished run of this version: the model is not read"
    )
    cli.stdout.write(
        f"{slug} v{found.version}: a state needs {found.needed} "
        f"label{'s' if found.needed != 1 else ''}; {model}"
    )
    for question in found.questions:
        for line in question_lines(question):
            cli.stdout.write(line)
    return EXIT_OK
