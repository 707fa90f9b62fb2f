"""`questions fetches`: the subcommand of the console's command line that lists who fetched
what of a set's export, per label and token (`sets.fetches_of`)."""

from __future__ import annotations

from typing import Any

from questions.cli.base import EXIT_OK, Console, add_json, add_set
from questions.models import QuestionSet
from questions.selectors import sets


def add_parsers(sub: Any) -> None:
    """The `fetches` subcommand."""
    out = sub.add_parser(
        "fetches",
        help="who fetched a set's export: per label and token, the latest fetch",
        description="List, per label and API token, the latest export fetch of SLUG (when, "
        "the version and ETag served, 200 or 304) and how many fetches the log counts. A "
        "fetch by version number is listed with no label.",
    )
    add_set(out)
    add_json(out, "print a JSON list")
    out.set_defaults(handler=do_fetches)


def do_fetches(cli: Console, *, slug: str, json: bool, **_: Any) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    rows = sets.fetches_of(question_set)
    if json:
        cli.emit_json(rows)
        return EXIT_OK
    if not rows:
        cli.stdout.write(f"{slug}: no export fetches logged.")
    for r in rows:
        label = r["label"] if r["label"] is not None else "(by version)"
        fetches = f"{r['fetches']} fetch{'' if r['fetches'] == 1 else 'es'}"
        cli.stdout.write(
            f"{label}: {r['token']} fetched v{r['version']} at {r['last_fetched_at']} "
            f"({r['status']}, ETag {r['etag'][:12]}…), {fetches} logged"
        )
    return EXIT_OK
