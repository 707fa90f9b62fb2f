"""`questions disputes`: the subcommand of the console's command line that lists a set's disputed
questions (labels that disagree, side by side with who gave them) and those a reviewer settled
or marked ambiguous (`selectors.disputes`, as the disputes page shows them), and settles one
with an answer or marks it ambiguous (`services.labels.dispute_settle`, the page's rules: a
reviewer, never one of the state's labellers while a reviewer who is not one exists)."""

from __future__ import annotations

from typing import Any

from questions import roles, services
from questions.cli.base import EXIT_OK, Console, Unusable, acting_user, add_json, add_set
from questions.models import QuestionSet
from questions.selectors import disputes


def add_parsers(sub: Any) -> None:
    """The `disputes` subcommand."""
    parser = sub.add_parser(
        "disputes",
        help="list the questions whose labels disagree, or settle one (an answer, or ambiguous)",
        description="Without --settle or --ambiguous, list SLUG's disputed questions (two "
        "labellers answered differently, on a set needing two or more labels), each with "
        "the labels side by side, then those a reviewer settled or marked ambiguous. With "
        "--settle STATE, settle the state's question Q with answer A (as the labelling page "
        "takes it: an option's name, a level's number, true or false); with --ambiguous "
        "STATE, mark it ambiguous: the pass rates leave it out and say how many they left "
        "out.",
        epilog="A settlement is a reviewer's (--user), never one of the state's labellers' "
        "while a reviewer who is not one exists (403); a question that is not disputed is "
        "refused (409); a reviewer may change their settlement. --json prints {needed, "
        "version, disputed_total, disputed: [...], settled: [...]}, each {state, state_id, "
        "content, question, status, choices, labels: [{labeller, answer, at}], settlement: "
        "{reviewer, ambiguous, answer, at} or null}; after a settlement, that one row.",
    )
    add_set(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--settle", metavar="STATE", help="settle this state's question")
    which.add_argument("--ambiguous", metavar="STATE", help="mark this state's question ambiguous")
    parser.add_argument("--question", metavar="Q", help="the question to settle")
    parser.add_argument("--answer", metavar="A", help="the answer that settles it (--settle)")
    parser.add_argument("--user", metavar="U", help="the reviewer who settles it")
    add_json(parser)
    parser.set_defaults(handler=do_disputes)


def do_disputes(
    cli: Console,
    *,
    slug: str,
    settle: str | None,
    ambiguous: str | None,
    question: str | None,
    answer: str | None,
    user: str | None,
    json: bool,
    **_: Any,
) -> int:
    state = settle if settle is not None else ambiguous
    if state is None and (question is not None or answer is not None):
        raise Unusable("--question and --answer go with --settle STATE or --ambiguous STATE")
    if state is not None and question is None:
        raise Unusable("name the question with --question Q")
    if settle is not None and answer is None:
        raise Unusable("--settle needs the answer that settles it: --answer A")
    if ambiguous is not None and answer is not None:
        raise Unusable("--ambiguous takes no --answer: an ambiguous state has none")
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    if state is None:
        return _list(cli, question_set, json)
    sample = question_set.sample_states.filter(name=state).first()
    if sample is None:
        return cli.fail(f"{slug} has no sample state {state}.", as_json=json, status=404)
    outcome = services.dispute_settle(
        sample=sample,
        question_id=question,
        reviewer=acting_user(user) if user else roles.OPERATOR,
        answer=answer,
        ambiguous=ambiguous is not None,
    )
    row = disputes.dispute(sample, question)
    if json:
        cli.emit_json(row.as_json() if row else {"state": state, "question": question})
    elif outcome.settled:
        cli.stdout.write(f"{state}: {question} settled as {row.answer_words if row else answer}")
    else:
        cli.stdout.write(f"{state}: {question} marked ambiguous; the pass rates leave it out")
    return EXIT_OK


def _list(cli: Console, question_set: QuestionSet, as_json: bool) -> int:
    found = disputes.disputes(question_set, limit=None)
    if as_json:
        cli.emit_json(found.as_json())
        return EXIT_OK
    cli.stdout.write(
        f"{question_set.slug}: {found.needed} label{'s' if found.needed != 1 else ''} needed; "
        f"{found.disputed_total} disputed, {len(found.settled)} settled by a reviewer"
    )
    for d in found.disputed:
        cli.stdout.write(f"{d.state_name}\t{d.question.id}\tdisputed\t{_labels(d)}")
    for d in found.settled:
        said = f"ambiguous ({d.reviewer})" if d.ambiguous else f"{d.answer_words} ({d.reviewer})"
        cli.stdout.write(f"{d.state_name}\t{d.question.id}\t{said}\t{_labels(d)}")
    return EXIT_OK


def _labels(d: disputes.Dispute) -> str:
    return " · ".join(f"{x.labeller}: {x.words}" for x in d.labels)
