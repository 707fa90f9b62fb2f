"""`questions states-to-label` and `questions states-export`: the subcommands of the console's
command line that list the sample states worth labelling next (`questions.labelling`, from
recorded answers only) and write a set's states with their expected answers as CSV or JSON Lines
(`questions.state_files`), the file a product owner labels in a spreadsheet and imports
again."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from questions.cli.base import EXIT_OK, Console, Unusable, add_json, add_set, add_version
from questions.core import labelling, state_files
from questions.models import QuestionSet, SampleState
from questions.selectors import labels, sets


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
