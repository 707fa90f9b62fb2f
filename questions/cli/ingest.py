"""`questions ingest-config` and `questions ingest`: the subcommands of the console's command
line that set how a set takes production states (sampling, retention, the daily quota,
redaction: `services.ingest.ingest_configure`) and send a file of them through the very path
the endpoint takes (`services.states_ingest`: limits, quota, sampling, redaction,
deduplication), printing the same counts."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions import roles, services
from questions.cli.base import EXIT_OK, Console, add_json, add_set, read_bytes
from questions.core import ingest, redaction
from questions.models import QuestionSet
from questions.services import ingest as ingest_services


def add_parsers(sub: Any) -> None:
    """The `ingest-config` and `ingest` subcommands."""
    config = sub.add_parser(
        "ingest-config",
        help="show or change how a set takes production states",
        description="Change what is given of SLUG's ingest settings and print them all: keep 1 "
        "state in N (by the state's hash, so a state is always in or out), delete unlabelled "
        "production states after D days, take at most Q states a day (UTC), and redact before "
        "storing: drop the state paths given, mask the patterns given, and apply the built-ins "
        f"({', '.join(redaction.BUILTINS)}; all on by default). --drop and --mask replace the "
        "lists (--no-drop, --no-mask empty them).",
    )
    add_set(config)
    config.add_argument("--keep-one-in", type=int, metavar="N", help="keep 1 state in N")
    config.add_argument(
        "--retention-days", type=int, metavar="D", help="keep unlabelled states D days"
    )
    config.add_argument("--daily-quota", type=int, metavar="Q", help="states a day, at most")
    config.add_argument(
        "--drop",
        action="append",
        metavar="PATH",
        help="a state path to drop (customer.email; * any key; again for more)",
    )
    config.add_argument("--no-drop", action="store_true", help="drop no path")
    config.add_argument(
        "--mask",
        action="append",
        metavar="REGEX",
        help="a regular expression whose matches become [masked] (again for more)",
    )
    config.add_argument("--no-mask", action="store_true", help="mask no pattern")
    config.add_argument(
        "--builtins",
        metavar="LIST",
        help=f"the built-ins to apply, comma-separated ({','.join(redaction.BUILTINS)}), or none",
    )
    add_json(config, "print the settings as one JSON object")
    config.set_defaults(handler=do_ingest_config)

    send = sub.add_parser(
        "ingest",
        help="send an NDJSON file of production states to a set (as the endpoint takes them)",
        description="Send FILE (NDJSON: one {state, answers?, version?, label?, at?} a line; "
        "- is standard input) to SLUG through the path POST /api/sets/SLUG/states takes: the "
        "limits of one request, the daily quota, sampling, redaction and deduplication, all or "
        "nothing. Prints the counts as JSON: received, kept, duplicates, sampled_out, redacted.",
    )
    add_set(send)
    send.add_argument("file", metavar="FILE")
    add_json(send, "on failure too, print JSON")
    send.set_defaults(handler=do_ingest)


def _question_set(cli: Console, slug: str, as_json: bool) -> QuestionSet | int:
    found = QuestionSet.objects.filter(slug=slug).first()
    if found is None:
        return cli.fail(f"There is no set {slug}.", as_json=as_json, status=404)
    return found


def do_ingest_config(
    cli: Console,
    *,
    slug: str,
    keep_one_in: int | None,
    retention_days: int | None,
    daily_quota: int | None,
    drop: list[str] | None,
    no_drop: bool,
    mask: list[str] | None,
    no_mask: bool,
    builtins: str | None,
    json: bool,
    **_: Any,
) -> int:
    question_set = _question_set(cli, slug, json)
    if isinstance(question_set, int):
        return question_set
    chosen = None
    if builtins is not None:
        chosen = [] if builtins.strip() == "none" else builtins.split(",")
    found = services.ingest_configure(
        question_set=question_set,
        user=roles.OPERATOR,
        keep_one_in=keep_one_in,
        retention_days=retention_days,
        daily_quota=daily_quota,
        drop=[] if no_drop else drop,
        mask=[] if no_mask else mask,
        builtins=chosen,
    )
    shown = ingest_services.ingest_settings_json(
        found, received_today=ingest_services.received_today(question_set)
    )
    if json:
        cli.emit_json(shown)
        return EXIT_OK
    cli.stdout.write(
        f"{slug}: keep 1 in {shown['keep_one_in']}, unlabelled kept {shown['retention_days']} "
        f"days, at most {shown['daily_quota']:,} states a day ({shown['received_today']:,} "
        "received today)"
    )
    cli.stdout.write(f"  drop: {', '.join(shown['drop']) or 'nothing'}")
    cli.stdout.write(f"  mask: {', '.join(shown['mask']) or 'nothing'}")
    cli.stdout.write(f"  built-ins: {', '.join(shown['builtins']) or 'none'}")
    return EXIT_OK


def do_ingest(cli: Console, *, slug: str, file: str, json: bool, **_: Any) -> int:
    # one byte past the limit is enough to tell a file too large (the service says so)
    body = read_bytes(file, most=settings.DECISIONS_INGEST_MAX_BYTES + 1)
    counts = services.states_ingest(
        slug=slug, body=body, media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    cli.emit_json(counts.as_json())
    return EXIT_OK
