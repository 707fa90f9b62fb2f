"""`questions states-to-label`, `states-export`, `state-label` and `labelling`: the subcommands of
the console's command line that list the sample states worth labelling next
(`questions.labelling`, from recorded answers only), write a set's states with their expected
answers as CSV or JSON Lines (`questions.state_files`: the file a product owner labels in a
spreadsheet and imports again), give one labeller's label (`services.labels.state_label`, the
labelling page's rules), and say how many labels a state needs and whether labellers see the
model's answer first (`labelling_configure`), with each labeller's progress
(`selectors.labels.labelling_progress`, as the page shows it)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from questions import roles, services
from questions.cli.base import (
    EXIT_OK,
    Console,
    Unusable,
    acting_user,
    add_json,
    add_set,
    add_version,
)
from questions.core import labelling, settling, state_files
from questions.models import QuestionSet, SampleState
from questions.selectors import labels, sets
from questions.services.labels import current_labels, question_of


def add_parsers(sub: Any) -> None:
    """The `states-to-label` and `states-export` subcommands."""
    ranked = sub.add_parser(
        "states-to-label",
        help="the sample states worth labelling next, and why",
        description="List SLUG's sample states that lack an expected answer for some question "
        "of version N (default: the newest valid version), the most telling first: the "
        "recorded answers disagree, are of low confidence, or a control needs labels. Reads "
        "recorded answers only; asks nothing.",
    )
    add_set(ranked)
    add_version(ranked)
    ranked.add_argument(
        "--limit",
        type=int,
        default=labelling.DEFAULT_LIMIT,
        metavar="K",
        help=f"at most K states (default {labelling.DEFAULT_LIMIT})",
    )
    add_json(ranked, 'print {"states": [...]}')
    ranked.set_defaults(handler=do_states_to_label)

    export = sub.add_parser(
        "states-export",
        help="write a set's sample states with their expected answers (CSV or JSONL)",
        description="Write SLUG's sample states, each with its name, state, expected answers "
        "and tags, as CSV or JSON Lines: the file `states-import` and the set page's upload "
        "read back.",
    )
    add_set(export)
    export.add_argument("--format", required=True, choices=state_files.FORMATS, dest="file_format")
    export.add_argument(
        "--source",
        choices=[c for c, _ in SampleState.Source.choices],
        help="only the states of this source: manual (typed or uploaded) or production (sent "
        "by the application); default: every state",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
    add_json(export, "on failure, print JSON")
    export.set_defaults(handler=do_states_export)
    _add_state_label(sub)
    _add_labelling(sub)


def _add_state_label(sub: Any) -> None:
    parser = sub.add_parser(
        "state-label",
        help="give one labeller's label to one question of a sample state",
        description="Give U's answer A to question Q of SLUG's sample state STATE, as the "
        "labelling page gives it: A is an option's name, a level's number or true/false. A "
        "labeller may change their own label (the new answer replaces theirs); with two or "
        "more labels needed a question takes one label from each labeller, none once it has "
        "every label it needs or a reviewer settled it, and the last needed label of a state "
        "held for another labeller is theirs.",
        epilog="--json prints {state, state_id, question, answer, words, labeller, labels, "
        "needed, status, expected}: `labels` the question's current labels (of `needed`), "
        "`status` settled, open, disputed or ambiguous and `expected` the settled answer — "
        "both null while the labelling is blind (two or more labels needed and the model "
        "hidden), as the page says nothing of the others' labels either. A refusal exits 1 "
        "with its status (403, 409, 422).",
    )
    add_set(parser)
    parser.add_argument("--state", required=True, metavar="NAME", help="the sample state")
    parser.add_argument("--question", required=True, metavar="Q")
    parser.add_argument("--answer", required=True, metavar="A")
    parser.add_argument("--user", metavar="U", help="the labeller (a label is a person's)")
    add_json(parser)
    parser.set_defaults(handler=do_state_label)


def _add_labelling(sub: Any) -> None:
    parser = sub.add_parser(
        "labelling",
        help="how many labels a state needs, whether the model shows, and who labelled how much",
        description="Print SLUG's labelling: how many labels each question of a state needs, "
        "whether labellers see the model's answer before giving theirs, how many answers are "
        "settled, and each labeller's progress (done / wanted: the labels they gave, and that "
        "plus what is still open to them). --needed K (1–5; 1: the newest label settles) and "
        "--show-model on|off change the set first; a reviewer's (--user).",
        epilog="--json prints {set, version, needed, show_model, blind, states, questions, "
        "pairs, settled, settled_per_question, labellers: [{labeller, done, wanted}]}.",
    )
    add_set(parser)
    add_version(parser)
    parser.add_argument("--needed", type=int, metavar="K", help="labels a question needs (1–5)")
    parser.add_argument("--show-model", choices=("on", "off"), help="the model's answer first")
    parser.add_argument("--user", metavar="U", help="the reviewer who changes the set")
    add_json(parser)
    parser.set_defaults(handler=do_labelling)


def do_states_to_label(
    cli: Console, *, slug: str, number: int | None, limit: int, json: bool, **_: Any
) -> int:
    if limit < 1:
        raise Unusable("--limit must be at least 1")
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    version = labels.labelling_version(question_set, number)
    if version is None:
        which = f"version {number}" if number is not None else "version"
        return cli.fail(f"{slug} has no {which}.", as_json=json, status=404)
    states = labels.states_to_label(question_set, version, limit=limit)
    if json:
        cli.emit_json({"states": [c.as_json() for c in states]})
        return EXIT_OK
    if not states:
        cli.stdout.write(f"{slug} v{version.number}: every sample state is labelled")
    for c in states:
        cli.stdout.write(f"{c.name}\t{', '.join(c.questions)}\t{c.reason}")
    return EXIT_OK


def do_states_export(
    cli: Console,
    *,
    slug: str,
    file_format: str,
    output: str | None,
    json: bool,
    source: str | None = None,
    **_: Any,
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    write = state_files.csv_lines if file_format == state_files.CSV else state_files.jsonl_lines
    written = 0
    with ExitStack() as stack:
        try:
            fh = (
                stack.enter_context(open(output, "w", encoding="utf-8", newline=""))
                if output
                else None
            )
        except OSError as exc:
            raise Unusable(f"cannot write {output}: {exc.strerror or exc}") from exc
        for line in write(sets.state_records(question_set, source=source or "")):
            written += 1
            if fh is None:
                cli.stdout.write(line, ending="")
            else:
                fh.write(line)
    rows = written - (file_format == state_files.CSV)
    where = f" to {output}" if output else ""
    which = f" {source}" if source else ""
    cli.stderr.write(f"wrote {rows}{which} sample states of {slug}{where}")
    return EXIT_OK


def do_state_label(
    cli: Console,
    *,
    slug: str,
    state: str,
    question: str,
    answer: str,
    user: str | None,
    json: bool,
    **_: Any,
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    sample = question_set.sample_states.filter(name=state).first()
    if sample is None:
        return cli.fail(f"{slug} has no sample state {state}.", as_json=json, status=404)
    saved = services.state_label(
        sample=sample,
        question_id=question,
        answer=answer,
        labeller=acting_user(user) if user else roles.OPERATOR,
    )
    asked, _ = question_of(question_set, question)
    blind = question_set.labels_needed > 1 and not question_set.labels_show_model
    outcome = saved.outcome
    row = {
        "state": sample.name,
        "state_id": sample.pk,
        "question": asked.id,
        "answer": saved.label.answer,
        "words": asked.said(saved.label.answer),
        "labeller": saved.label.labeller.get_username(),
        "labels": len(current_labels(saved.sample, asked.id)),
        "needed": question_set.labels_needed,
        "status": None if blind else outcome.status,
        "expected": outcome.answer if outcome.settled and not blind else None,
    }
    if json:
        cli.emit_json(row)
        return EXIT_OK
    said = f"{state}: {row['words']} ({row['labeller']}'s label"
    if blind:
        said += f"; {row['labels']} of {row['needed']} labels given, blind)"
    elif outcome.status == settling.SETTLED:
        said += "; settled)"
    else:
        said += f"; {outcome.status}, {row['labels']} of {row['needed']} labels)"
    cli.stdout.write(said)
    return EXIT_OK


def do_labelling(
    cli: Console,
    *,
    slug: str,
    number: int | None,
    needed: int | None,
    show_model: str | None,
    user: str | None,
    json: bool,
    **_: Any,
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    if needed is not None or show_model is not None:
        services.labelling_configure(
            question_set=question_set,
            user=acting_user(user) if user else roles.OPERATOR,
            needed=needed,
            show_model=None if show_model is None else show_model == "on",
        )
    version = labels.labelling_version(question_set, number)
    if version is None:
        which = f"version {number}" if number is not None else "version"
        return cli.fail(f"{slug} has no {which}.", as_json=json, status=404)
    progress = labels.labelling_progress(question_set, version)
    if json:
        cli.emit_json({"set": slug, **progress.as_json()})
        return EXIT_OK
    how = "blind" if progress.blind else "the model's answer shown"
    cli.stdout.write(
        f"{slug} v{progress.version}: {progress.needed} label{'s' if progress.needed != 1 else ''}"
        f" a question, {how}; {progress.settled} of {progress.pairs} answers settled "
        f"({progress.states} states × {len(progress.questions)} questions)"
    )
    for p in progress.labellers:
        cli.stdout.write(f"{p.labeller}\t{p.done} / {p.wanted}")
    return EXIT_OK
