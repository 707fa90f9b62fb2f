"""`questions records` and `questions records-import`: the subcommands of the console's command
line that write a run's or a version's recordings as `.jevl` records and read `.jevl` records in
as recordings (`questions.services.records`)."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import Any

from questions import roles
from questions.cli.base import EXIT_OK, Console, Unusable, acting_user, add_json, add_set
from questions.models import BatchRun, QuestionSet, Version
from questions.services import records as record_services


def add_parsers(sub: Any) -> None:
    """The `records` and `records-import` subcommands."""
    out = sub.add_parser(
        "records",
        help="write a run's or a version's recordings as .jevl records",
        description="Write one .jevl line (jevkit-core's record format v1) per answered "
        "decision of run ID, or of version N (every call that asked it), to FILE or "
        "standard output, one line at a time.",
    )
    add_set(out)
    which = out.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", type=int, dest="run_id", metavar="ID")
    which.add_argument("--version", type=int, dest="number", metavar="N")
    out.add_argument("--format", required=True, choices=["jevl"], dest="record_format")
    out.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
    add_json(out, "on failure, print JSON")
    out.set_defaults(handler=do_records)

    imp = sub.add_parser(
        "records-import",
        help="keep .jevl records as recordings the recorded backend replays",
        description="Read the records in FILE (- reads standard input) into SLUG, all or "
        "nothing: each is checked (strict JSON, v 1, its id, its questions, its answers by "
        "the typesafe wire's rules) and matched to the version with its questions; records "
        "recorded already are skipped. Each is kept as answered by its model and asked as its "
        "meta.model_asked (the alias the application asked, which the console writes; else its "
        "model), so a replay (--backend recorded) asking either model finds it.",
    )
    imp.add_argument("file", metavar="FILE")
    add_set(imp)
    imp.add_argument(
        "--user", help="who imports, an author (default: the operator, recorded as nobody)"
    )
    add_json(imp, "print one JSON object")
    imp.set_defaults(handler=do_records_import)


def do_records(
    cli: Console,
    *,
    slug: str,
    run_id: int | None,
    number: int | None,
    output: str | None,
    json: bool,
    **_: Any,
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    run = version = None
    if run_id is not None:
        run = BatchRun.objects.filter(pk=run_id, question_set=question_set).first()
        if run is None:
            return cli.fail(f"{slug} has no run {run_id}.", as_json=json, status=404)
        what = f"run {run_id}"
    else:
        version = Version.objects.filter(question_set=question_set, number=number).first()
        if version is None:
            return cli.fail(f"{slug} has no version {number}.", as_json=json, status=404)
        what = f"version {number}"
    writer = record_services.RecordWriter(record_services.recordings_of(run=run, version=version))
    with ExitStack() as stack:
        try:
            fh = stack.enter_context(open(output, "w", encoding="utf-8")) if output else None
        except OSError as exc:
            raise Unusable(f"cannot write {output}: {exc.strerror or exc}") from exc
        for line in writer:
            if fh is None:
                cli.stdout.write(line, ending="")
            else:
                fh.write(line)
    skipped = (
        f"; {writer.skipped} skipped (their request holds no questions map: the llm wire)"
        if writer.skipped
        else ""
    )
    where = f" to {output}" if output else ""
    cli.stderr.write(f"wrote {writer.written} records of {slug} {what}{where}{skipped}")
    return EXIT_OK


def do_records_import(
    cli: Console, *, file: str, slug: str, user: str | None, json: bool, **_: Any
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    importer = acting_user(user) if user else roles.OPERATOR
    with ExitStack() as stack:
        try:
            lines = sys.stdin.buffer if file == "-" else stack.enter_context(open(file, "rb"))
        except OSError as exc:
            raise Unusable(f"cannot read {file}: {exc.strerror or exc}") from exc
        try:
            report = record_services.records_import(
                question_set=question_set, lines=lines, user=importer
            )
        except OSError as exc:
            raise Unusable(f"cannot read {file}: {exc.strerror or exc}") from exc
    if json:
        cli.emit_json({"set": slug, **report.to_json()})
        return EXIT_OK
    versions = ", ".join(f"v{n}: {c}" for n, c in sorted(report.by_version.items()))
    cli.stdout.write(
        f"{slug}: {report.imported} records imported"
        + (f" ({versions})" if versions else "")
        + f", {report.skipped} skipped (recorded already)"
    )
    if report.unlinked_states:
        cli.stdout.write(
            f"  {report.unlinked_states} name a state that is no sample state of {slug}: "
            "they replay for that state's content"
        )
    return EXIT_OK
