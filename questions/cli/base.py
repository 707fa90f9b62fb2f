"""What every command group of the command line shares: the exit codes, `Unusable` and the one
mapping of refusals to them (`execute`), the acting user, reading a JSON file, the JSON output
(`Console`), the shared `--set/--version/--label/--json` options, and `run_in_foreground`: find
what the run is of, create it, execute it in this process, summarise, print, exit code.

Exit status: 0 success, 1 invalid or failed (the reason printed; with --json a JSON object with
`detail` and the mapped `status`), 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth import get_user_model

from questions import services
from questions.core import spec
from questions.models import BatchRun
from questions.selectors import runs

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
#: `prove` and `suggest`: done, and nothing proven better (none worse, for `prove`)
EXIT_NOT_PROVEN = 3

Subject = TypeVar("Subject")
Summary = TypeVar("Summary")


class Unusable(Exception):
    """The arguments or the file cannot be used at all (exit 2)."""


class Console:
    """Where a handler writes: the management command's stdout and stderr (Django's wrappers:
    each `write` ends its line unless told otherwise)."""

    def __init__(self, stdout: Any, stderr: Any) -> None:
        self.stdout, self.stderr = stdout, stderr

    def emit_json(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, ensure_ascii=False, indent=2))

    def fail(self, detail: str, *, as_json: bool, status: int = 422) -> int:
        """Say why the command failed (a JSON object with `--json`); the exit status 1."""
        if as_json:
            self.emit_json({"status": status, "detail": detail})
        else:
            self.stderr.write(detail)
        return EXIT_FAILED

    def progress(self, current: BatchRun) -> None:
        """A foreground run's progress line, on stderr."""
        counts = runs.run_counts(current)
        self.stderr.write(
            f"run {current.pk}: {counts['done']}/{counts['total']} ({counts['failed']} failed)"
        )


def execute(cli: Console, options: dict[str, Any]) -> int:
    """Call the subcommand's handler (its parser's default `handler`) with the parsed options,
    and map what it raises: a service's refusal exits 1, `Unusable` 2 (with `--json` as an
    object holding the subcommand's `unusable` fields, then `status` 400 and `detail`)."""
    try:
        return options["handler"](cli, **options)
    except services.Refusal as exc:  # the one mapping of a service's refusal
        return cli.fail(str(exc), as_json=options.get("json", False), status=exc.status)
    except Unusable as exc:
        if options.get("json"):
            cli.emit_json({**options.get("unusable", {}), "status": 400, "detail": str(exc)})
        else:
            cli.stderr.write(str(exc))
        return EXIT_UNUSABLE


def bad_input(cli: Console, detail: str, *, as_json: bool, status: int = 400) -> int:
    """Bad input where exit 1 means a verdict (`prove`, `suggest`): said in words (a JSON
    object with --json), exit 2."""
    if as_json:
        cli.emit_json({"status": status, "detail": detail})
    else:
        cli.stderr.write(detail)
    return EXIT_UNUSABLE


def acting_user(username: str | None):
    """The user a command acts as: the one named, or else the first superuser."""
    users = get_user_model().objects
    if username:
        user = users.filter(username=username).first()
        if user is None:
            raise Unusable(f"There is no user {username}.")
        return user
    user = users.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise Unusable("Name the author with --user (there is no superuser to default to).")
    return user


def read_bytes(name: str, *, most: int = -1) -> bytes:
    """A file's bytes (`-` is standard input), at most `most` of them when given, or
    `Unusable` saying why they cannot be read."""
    try:
        if name == "-":
            return sys.stdin.buffer.read(most)
        with open(name, "rb") as fh:
            return fh.read(most)
    except OSError as exc:
        raise Unusable(f"cannot read {name}: {exc.strerror or exc}") from exc


def read_json_file(name: str) -> Any:
    """The JSON value in a file (`-` is standard input), or `Unusable` saying why not."""
    raw = read_bytes(name)
    try:
        return spec.loads(raw)
    except spec.JSONTextError as exc:
        raise Unusable(f"{name} is not JSON: {exc}") from exc


def read_json_lines(name: str, *, most: int | None = None) -> list[Any]:
    """A JSON array, or JSON Lines (one value per non-blank line). With `most`, JSON Lines are
    read no further than one value past it: the caller refuses so many without the rest of a
    file of a million lines being parsed into memory."""
    raw = read_bytes(name)
    try:
        value = spec.loads(raw)
    except spec.JSONTextError:
        items = []
        for number, line in enumerate(raw.splitlines(), 1):
            if most is not None and len(items) > most:
                break
            if line.strip():
                try:
                    items.append(spec.loads(line))
                except spec.JSONTextError as exc:
                    raise Unusable(f"{name} line {number} is not JSON: {exc}") from exc
        return items
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]  # JSON Lines with a single line
    raise Unusable(f"{name} must hold a JSON array or JSON Lines of objects")


# the shared options ----------------------------------------------------------------------------


def add_set(parser: Any, *, required: bool = True) -> None:
    """`--set SLUG` (into `slug`); `parser` may be a group."""
    parser.add_argument("--set", required=required, dest="slug", metavar="SLUG")


def add_version(parser: Any, *, required: bool = False) -> None:
    """`--version N` (into `number`)."""
    parser.add_argument("--version", required=required, type=int, dest="number", metavar="N")


def add_label(parser: Any, *, required: bool = False, default: str | None = None) -> None:
    """`--label L`."""
    parser.add_argument("--label", required=required, default=default, metavar="L")


def add_version_or_label(parser: Any, *, required: bool = False) -> None:
    """`--version N` or `--label L`, not both (`sets.version_named` reads either)."""
    which = parser.add_mutually_exclusive_group(required=required)
    add_version(which)
    add_label(which)


def add_json(parser: Any, help: str | None = None) -> None:
    """`--json`, with what it prints for this subcommand."""
    parser.add_argument("--json", action="store_true", help=help)


def no_version(slug: str, number: int | None, label: str | None) -> str:
    """Why `sets.version_named` found nothing, as a command says it."""
    if label:
        return f"{slug} has no label {label}."
    return f"{slug} has no version{'' if number is None else f' {number}'}."


# the foreground run ----------------------------------------------------------------------------


def run_in_foreground(
    cli: Console,
    subject: Subject | None,
    *,
    missing: str,
    start: Callable[[Subject], BatchRun],
    summary: Callable[[BatchRun], Summary],
    show: Callable[[BatchRun, Summary], None],
    failed: Callable[[Summary], bool],
    as_json: bool,
    as_value: Callable[[Summary], Any] = lambda summary: summary,
    progress: bool = True,
) -> int:
    """Run something in this process and report it: `missing` (404) when `subject` (what the
    run is of: a version, or the run it re-runs) is None; else `start(subject)` creates the run
    (not queued), the batch engine executes it here (progress on stderr unless `progress` is
    off), `summary(run)` reads the finished run, and it is printed as JSON (`as_value` of it)
    or by `show`. Exit 1 when `failed(summary)`."""
    if subject is None:
        return cli.fail(missing, as_json=as_json, status=404)
    run = start(subject)
    services.batch_execute(run.pk, on_progress=cli.progress if progress else None)
    run.refresh_from_db()
    found = summary(run)
    if as_json:
        cli.emit_json(as_value(found))
    else:
        show(run, found)
    return EXIT_FAILED if failed(found) else EXIT_OK
