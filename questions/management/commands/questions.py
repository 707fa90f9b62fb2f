"""The console's command line: `python manage.py questions <subcommand>`.

Exit status: 0 success, 1 invalid or failed (the reason printed; with --json a JSON object with
`detail` and the mapped `status`), 2 unusable arguments or an unreadable file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from questions import exports, roles, services
from questions.cli.application import ApplicationCommands
from questions.cli.application import add_parsers as add_application_parsers
from questions.cli.attribution import AttributionCommands
from questions.cli.attribution import add_parsers as add_attribution_parsers
from questions.cli.controls import ControlCommands
from questions.cli.controls import add_parsers as add_control_parsers
from questions.cli.fetches import FetchCommands
from questions.cli.fetches import add_parsers as add_fetch_parsers
from questions.cli.labels import LabelCommands
from questions.cli.labels import add_parsers as add_label_parsers
from questions.cli.records import RecordCommands
from questions.cli.records import add_parsers as add_record_parsers
from questions.cli.scorecard import ScorecardCommands
from questions.cli.scorecard import add_parsers as add_scorecard_parsers
from questions.core import diff, spec, stats
from questions.dev import demo
from questions.engine import backends
from questions.models import APIToken, BatchRun, Label, QuestionSet, Version
from questions.selectors import comparison, comparison_formats, runs, sets
from questions.services import batches as run_defaults

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


class Unusable(Exception):
    """The arguments or the file cannot be used at all (exit 2)."""


def read_json_file(name: str) -> Any:
    """The JSON value in a file (`-` is standard input), or `Unusable` saying why not."""
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise Unusable(f"cannot read {name}: {exc.strerror or exc}") from exc
    try:
        return spec.loads(raw)
    except spec.JSONTextError as exc:
        raise Unusable(f"{name} is not JSON: {exc}") from exc


def read_json_lines(name: str) -> list[Any]:
    """A JSON array, or JSON Lines (one value per non-blank line)."""
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise Unusable(f"cannot read {name}: {exc.strerror or exc}") from exc
    try:
        value = spec.loads(raw)
    except spec.JSONTextError:
        items = []
        for number, line in enumerate(raw.splitlines(), 1):
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


def _user(username: str | None):
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


def _file_into_set(parser) -> None:
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--set", required=True, dest="slug", metavar="SLUG")
    parser.add_argument("--user", help="the author (default: the first superuser)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


class Command(
    AttributionCommands,
    ControlCommands,
    RecordCommands,
    ApplicationCommands,
    FetchCommands,
    ScorecardCommands,
    LabelCommands,
    BaseCommand,
):
    help = "Validate, import, run, review and export question sets."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        validate = sub.add_parser(
            "validate",
            help="check a document against the question-set contract",
            description="Check FILE (a questions map, a POST /api/decisions body, a provider "
            "request body or an export document; - reads standard input).",
            epilog="Every error and warning is printed on its own line with its path, the "
            "question, the "
            "rule and the limit. --json prints {valid, errors, warnings, sha256} (each issue "
            "with path, loc (the path as a list of keys), code, message, question, limit, "
            "actual; sha256 is the canonical questions hash, null when invalid), plus status "
            "and detail when invalid. Exit 0 valid (warnings allowed), 1 invalid, 2 the file is "
            "unreadable or not JSON.",
        )
        validate.add_argument("file", metavar="FILE")
        validate.add_argument("--json", action="store_true", help="print one JSON object")
        validate.add_argument(
            "--state-file",
            action="append",
            default=[],
            metavar="FILE",
            help="a sample state (any JSON) the backticked state paths are checked against; "
            "repeat for more (a body's own state is one already)",
        )

        imp = sub.add_parser(
            "import",
            help="a new draft version from a document",
            description="Make a new draft of SLUG from FILE (a questions map, a request body or "
            "an export document); the set is created if new. Invalid input changes nothing.",
            epilog="Refused while the set has an open draft; an invalid document changes nothing "
            "(its "
            "errors are printed as validate prints them). --user defaults to the first "
            "superuser.",
        )
        _file_into_set(imp)

        states = sub.add_parser(
            "states-import",
            help="add sample states from a JSON array or JSONL",
            description='Add the sample states in FILE, each {"name", "state", "expected"?, '
            '"tags"?}, to SLUG: all or nothing. A state whose content the set has already is '
            "skipped as a duplicate; one named as an existing state with the same content "
            "updates its expected answers (a new revision).",
        )
        _file_into_set(states)

        submit = sub.add_parser("submit", help="submit a draft for review (it freezes)")
        submit.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        submit.add_argument("--version", required=True, type=int, dest="number", metavar="N")
        submit.add_argument("--user", required=True)
        submit.add_argument("--json", action="store_true")

        approve = sub.add_parser(
            "approve",
            help="approve a submitted version (never your own), optionally labelling it",
            epilog="Holds to the review page's rules: a version with no finished batch run, or "
            "whose latest run passes fewer of the states it and the baseline's latest run both "
            "checked (or shares none with it), is refused (exit 1; --json gives "
            "{status: 422, detail}, the detail naming the flag) unless --confirm-weak-evidence "
            "is given (the page's Approve anyway); the approval's note then opens with "
            "'Approved although this version ... (confirmed).'. Prints the model and "
            "answered_by it pinned.",
        )
        approve.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        approve.add_argument("--version", required=True, type=int, dest="number", metavar="N")
        approve.add_argument("--user", required=True)
        approve.add_argument("--label", default="", metavar="L")
        approve.add_argument("--note", default="")
        approve.add_argument(
            "--confirm-weak-evidence",
            action="store_true",
            help="approve a version whose evidence is weak (no finished batch run, or fewer "
            "passes than the baseline's on the states both runs checked), as the review "
            "page's “Approve anyway”; recorded in the note",
        )
        approve.add_argument("--json", action="store_true")

        export = sub.add_parser("export", help="write an approved version's export document")
        export.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        which_export = export.add_mutually_exclusive_group(required=True)
        which_export.add_argument("--version", type=int, dest="number", metavar="N")
        which_export.add_argument("--label", metavar="L")
        export.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
        export.add_argument("--json", action="store_true", help="on failure, print JSON")

        token = sub.add_parser(
            "token",
            help="create an API token for the runtime (printed once, alone on stdout), or "
            "revoke the tokens of a name",
            epilog="--revoke NAME revokes every active token of that name and prints their "
            "prefixes (exit 1 when there is none).",
        )
        token_action = token.add_mutually_exclusive_group(required=True)
        token_action.add_argument("--name", help="a new token for NAME")
        token_action.add_argument(
            "--revoke", metavar="NAME", help="revoke every active token named NAME"
        )
        token.add_argument("--json", action="store_true", help="with --revoke, print JSON")

        label = sub.add_parser(
            "label",
            help="point a label at an approved version (move it, or roll it back)",
            description="Point label L of SLUG at approved version N; every move is logged, "
            "and a rollback is a move back.",
            epilog="A reviewer's move, logged with the note; a draft or in-review version is "
            "refused "
            "with 409.",
        )
        label.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        label.add_argument("--label", required=True, metavar="L")
        label.add_argument("--version", required=True, type=int, dest="number", metavar="N")
        label.add_argument("--user", required=True, help="the reviewer who moves it")
        label.add_argument("--note", default="", metavar="T")
        label.add_argument("--json", action="store_true")

        changes = sub.add_parser(
            "request-changes",
            help="send a submitted version back to its author with a note",
        )
        changes.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        changes.add_argument("--version", required=True, type=int, dest="number", metavar="N")
        changes.add_argument("--user", required=True, help="the reviewer")
        changes.add_argument("--note", required=True, metavar="T", help="what should change")
        changes.add_argument("--json", action="store_true")

        diff_ = sub.add_parser(
            "diff",
            help="what changed in the words between two versions",
            description="The semantic diff of version N and version M of SLUG, per question "
            "and field: added, removed, retyped, changed, renamed options, reordered levels.",
            epilog="Each changed field's words before (-) and after (+). --json gives {set, from, "
            "to, "
            "summary, reordered, questions: [{id, status, type_before, type_after, changes: "
            "[{label, kind, before, after, note?}]}]}.",
        )
        diff_.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        diff_.add_argument("--from", required=True, type=int, dest="from_number", metavar="N")
        diff_.add_argument("--to", required=True, type=int, dest="to_number", metavar="M")
        diff_.add_argument("--json", action="store_true")

        compare = sub.add_parser(
            "compare",
            help="answers side by side: batch runs, or versions through a backend",
            description="Columns are run:ID (a batch run) or vN:BACKEND (version N asked "
            "through BACKEND; a live backend needs --state). Each column is marked against "
            "the first: flips, distances, and passes against the expected answers.",
            epilog="Each cell is marked against the first column (* and the distance where an "
            "answer "
            "moved, a check or a cross against the expected answer); --csv and --json are the "
            "compare page's downloads, every state. A column that cannot be shown (no such "
            "run, a live backend over every state) exits 1; a column that is not run:ID or "
            "vN:BACKEND exits 2.",
        )
        compare.add_argument("--set", required=True, dest="slug", metavar="SLUG")
        compare.add_argument(
            "--col", required=True, action="append", dest="columns", metavar="run:ID|vN:BACKEND"
        )
        compare.add_argument("--state", dest="state_name", metavar="NAME", help="one state")
        compare.add_argument(
            "--threshold",
            type=float,
            default=run_defaults.DEFAULT_THRESHOLD,
            help="a noul's true from",
        )
        compare_format = compare.add_mutually_exclusive_group()
        compare_format.add_argument("--csv", action="store_true")
        compare_format.add_argument("--json", action="store_true")

        ask = sub.add_parser(
            "ask",
            help="ask a question set about a state, live or recorded",
            description="Ask the questions of a version (--set) or a file (--file) about a "
            "sample state (--state) or a state file (--state-file: its JSON value; null is a "
            "value). Prints the checked decision as JSON.",
            epilog="The decision: model, answers by question id, usage, cost, timing (provider_ms "
            "and "
            "total_ms as the console measured them; the runtime's own as runtime_timing), "
            "backend, calibrated (false through llm), the provider's request_id, an answer's "
            "flags. On failure it exits 1 and, with --json, prints {status, detail, "
            "provider_status_code?, provider_detail?} with the mapped 422/429/502/503/504. An "
            "invalid document or a missing key sends nothing. Every live call is recorded: "
            "--backend recorded replays what typesafe answered, recorded:runtime and "
            "recorded:openrouter what those wires answered. --label L asks the approved "
            "version the label points at.",
        )
        source = ask.add_mutually_exclusive_group(required=True)
        source.add_argument("--set", dest="slug", metavar="SLUG")
        source.add_argument("--file", metavar="FILE")
        which = ask.add_mutually_exclusive_group()
        which.add_argument("--version", type=int, dest="number", metavar="N")
        which.add_argument("--label", metavar="L")
        states = ask.add_mutually_exclusive_group(required=True)
        states.add_argument("--state", dest="state_name", metavar="NAME")
        states.add_argument("--state-file", metavar="FILE")
        ask.add_argument("--backend", default=backends.DEFAULT, choices=list(backends.NAMES))
        ask.add_argument("--model", help="the model to ask (default: the backend's)")
        ask.add_argument("--json", action="store_true", help="on failure, print JSON too")

        batch = sub.add_parser(
            "batch",
            help="ask a version about every sample state, in the foreground, and gate on it",
            description="Run the batch engine in the foreground and print a summary; exit 1 "
            "when any state failed or the pass rate is below --min-pass-rate.",
            epilog="Progress goes to stderr. --json gives {run, set, version, backend, calibrated, "
            "status, states, answered, failed, pass_rate, per_question, duration_ms} "
            "(pass_rate null when no state has expected answers; status failed when every "
            "state failed). --rerun-failed RUN starts a new run of RUN's own version, backend, "
            "model, concurrency, attempts and threshold over the states that failed in RUN "
            "(refused while RUN is still running, or when none failed).",
        )
        what_batch = batch.add_mutually_exclusive_group(required=True)
        what_batch.add_argument("--set", dest="slug", metavar="SLUG")
        what_batch.add_argument(
            "--rerun-failed",
            type=int,
            metavar="RUN",
            help="a new run of run RUN's version, backend, model, concurrency and threshold "
            "over the states that failed in it",
        )
        which_batch = batch.add_mutually_exclusive_group()
        which_batch.add_argument("--version", type=int, dest="number", metavar="N")
        which_batch.add_argument("--label", metavar="L")
        batch.add_argument("--backend", choices=list(backends.NAMES), help="default typesafe")
        batch.add_argument("--model")
        batch.add_argument(
            "--concurrency",
            type=int,
            metavar="K",
            help=f"default {run_defaults.DEFAULT_CONCURRENCY}",
        )
        batch.add_argument("--tag", help="only the sample states with this tag")
        batch.add_argument(
            "--threshold",
            type=float,
            help=f"a noul at or above this is true (default {run_defaults.DEFAULT_THRESHOLD})",
        )
        batch.add_argument("--min-pass-rate", type=float, default=None, metavar="X")
        batch.add_argument("--json", action="store_true")

        add_control_parsers(sub)
        add_attribution_parsers(sub)
        add_record_parsers(sub)
        add_application_parsers(sub)
        add_fetch_parsers(sub)
        add_scorecard_parsers(sub)
        add_label_parsers(sub)
        standin = sub.add_parser("standin", help="serve the local stand-in provider")
        standin.add_argument("--port", type=int, default=8765)
        standin.add_argument(
            "--latency-ms", type=float, default=0, help="wait this long before every answer"
        )

        demo_ = sub.add_parser(
            "demo",
            help="demo users author/reviewer (password demo) and demo sets",
            description="Create the demo users and sets that are missing. Refused unless "
            "DJANGO_DEBUG is on or --force is given.",
        )
        demo_.add_argument("--force", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"do_{options['subcommand'].replace('-', '_')}")
        try:
            code = handler(**options)
        except services.Refusal as exc:  # the one mapping of a service's refusal
            code = self.fail(str(exc), as_json=options.get("json", False), status=exc.status)
        except Unusable as exc:
            if options.get("json"):
                out: dict[str, Any] = {"status": 400, "detail": str(exc)}
                if options["subcommand"] == "validate":
                    out = {"valid": False, "errors": [], "warnings": [], "sha256": None, **out}
                self.emit_json(out)
            else:
                self.stderr.write(str(exc))
            code = EXIT_UNUSABLE
        if code:
            sys.exit(code)

    def emit_json(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, ensure_ascii=False, indent=2))

    def fail(self, detail: str, *, as_json: bool, status: int = 422) -> int:
        if as_json:
            self.emit_json({"status": status, "detail": detail})
        else:
            self.stderr.write(detail)
        return EXIT_FAILED

    # import, states-import, submit, demo ---------------------------------------------------

    def do_import(self, *, file: str, slug: str, user: str | None, json: bool, **_: Any) -> int:
        value = read_json_file(file)
        author = _user(user)
        try:
            version = services.version_import(slug=slug, value=value, author=author)
        except services.InvalidContent as exc:
            if json:
                self.emit_json(
                    {"status": 422, "detail": str(exc), "errors": [e.as_dict() for e in exc.errors]}
                )
            else:
                for issue in exc.errors:
                    self.stdout.write(f"error: {issue}")
                self.stderr.write("invalid: nothing was imported")
            return EXIT_FAILED
        out = {
            "set": version.question_set.slug,
            "version": version.number,
            "status": version.status,
            "sha256": version.sha256,
        }
        if json:
            self.emit_json(out)
        else:
            self.stdout.write(
                f"{out['set']} version {out['version']} (draft), sha256 {out['sha256']}"
            )
        return EXIT_OK

    def do_states_import(
        self, *, file: str, slug: str, user: str | None, json: bool, **_: Any
    ) -> int:
        items = read_json_lines(file)
        author = _user(user)
        question_set = QuestionSet.objects.filter(slug=slug).first()
        if question_set is None:
            return self.fail(f"There is no set {slug}.", as_json=json, status=404)
        try:
            report = services.sample_states_import(
                question_set=question_set, items=items, author=author
            )
        except services.ServiceError as exc:
            return self.fail(f"{exc}; nothing was imported", as_json=json, status=exc.status)
        if json:
            self.emit_json(
                {
                    "set": slug,
                    "imported": [s.name for s in report.added],
                    "relabelled": [s.name for s in report.relabelled],
                    "skipped": [{"name": n, "duplicate_of": d} for n, d in report.duplicates],
                }
            )
            return EXIT_OK
        line = f"{slug}: {len(report.added)} sample states imported"
        if report.relabelled:
            line += f", {len(report.relabelled)} with new expected answers"
        if report.duplicates:
            line += f", {len(report.duplicates)} skipped as duplicates by content"
        self.stdout.write(line)
        return EXIT_OK

    def do_submit(self, *, slug: str, number: int, user: str, json: bool, **_: Any) -> int:
        version = Version.objects.of(slug, number).first()
        if version is None:
            return self.fail(f"{slug} has no version {number}.", as_json=json, status=404)
        version = services.version_submit(version=version, author=_user(user))
        if json:
            self.emit_json({"set": slug, "version": number, "status": version.status})
        else:
            self.stdout.write(f"{slug} version {number} submitted for review")
        return EXIT_OK

    def do_ask(
        self,
        *,
        slug,
        file,
        number,
        label,
        state_name,
        state_file,
        backend,
        model,
        json: bool,
        **_: Any,
    ) -> int:
        version = sample = None
        if file:
            if number is not None or label:
                raise Unusable("--version and --label go with --set, not --file")
            if state_name:
                raise Unusable(
                    "--state names a sample state of a set; with --file use --state-file"
                )
            document = read_json_file(file)
        else:
            version = sets.version_named(slug, number=number, label=label)
            if version is None:
                which = f"label {label}" if label else f"version {number or ''}".strip()
                return self.fail(f"{slug} has no {which}.", as_json=json, status=404)
            document = version.document
        result = spec.validate(document, limits=settings.DECISIONS_LIMITS)
        if result.document is None:
            shown = "; ".join(str(e) for e in result.errors[:5])
            return self.fail(f"Nothing was sent: {shown}", as_json=json)
        questions = result.document.questions
        if state_file:
            state = read_json_file(state_file)
        else:
            if version is None:
                raise Unusable("--state needs --set")
            sample = version.question_set.sample_states.filter(name=state_name).first()
            if sample is None:
                return self.fail(
                    f"{slug} has no sample state {state_name!r}.", as_json=json, status=404
                )
            state = sample.state
        revision = sample.current_revision() if sample else None
        outcome = services.decision_ask(
            backend=backend,
            questions=questions,
            state=state,
            user=roles.OPERATOR,
            model=model,
            version=version,
            sample_state=revision,
        )
        if outcome.error:
            if json:
                self.emit_json(outcome.error.to_json())
            else:
                self.stderr.write(f"{outcome.error.status}: {outcome.error.detail}")
                if outcome.error.provider_detail:
                    self.stderr.write(f"provider said: {outcome.error.provider_detail}")
            return EXIT_FAILED
        self.emit_json(outcome.to_json())
        return EXIT_OK

    def do_approve(
        self,
        *,
        slug: str,
        number: int,
        user: str,
        label: str,
        note: str,
        confirm_weak_evidence: bool,
        json: bool,
        **_: Any,
    ) -> int:
        version = Version.objects.of(slug, number).first()
        if version is None:
            return self.fail(f"{slug} has no version {number}.", as_json=json, status=404)
        try:
            version = services.version_approve(
                version=version,
                reviewer=_user(user),
                note=note,
                label=label,
                confirm_weak_evidence=confirm_weak_evidence,
            )
        except services.WeakEvidence as exc:
            return self.fail(
                f"{slug} version {number} {exc.reason}: give --confirm-weak-evidence to approve "
                "it anyway, and say why with --note.",
                as_json=json,
                status=exc.status,
            )
        out = {
            "set": slug,
            "version": number,
            "status": version.status,
            "label": label or None,
            "model": version.approved_model,
            "answered_by": version.approved_model_answered,
        }
        if json:
            self.emit_json(out)
        else:
            answered = version.approved_model_answered
            shown = ", ".join(answered) if isinstance(answered, list) else answered
            self.stdout.write(
                f"{slug} version {number} approved"
                + (f"; {label} points at it" if label else "")
                + f"; model {version.approved_model}, "
                + (f"answered by {shown}" if shown else "no answering model recorded")
            )
        return EXIT_OK

    def do_export(
        self,
        *,
        slug: str,
        number: int | None,
        label: str | None,
        output: str | None,
        json: bool,
        **_: Any,
    ) -> int:
        version = exports.exportable_version(slug, label=label, number=number)
        if version is None:
            which = f"label {label!r}" if label is not None else f"version {number}"
            return self.fail(f"{slug} has no approved {which}.", as_json=json, status=404)
        text = exports.export_text(exports.export_document(version))
        if output:
            try:
                Path(output).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise Unusable(f"cannot write {output}: {exc.strerror or exc}") from exc
            self.stderr.write(f"wrote {output} ({slug} v{version.number}, sha256 {version.sha256})")
        else:
            self.stdout.write(text, ending="")
        return EXIT_OK

    def do_token(self, *, name: str | None, revoke: str | None, json: bool, **_: Any) -> int:
        if revoke is not None:
            return self._token_revoke(revoke, json)
        try:
            _, raw = services.api_token_create(name=name, user=roles.OPERATOR)
        except services.ServiceError as exc:
            raise Unusable(str(exc)) from exc
        self.stdout.write(raw)
        return EXIT_OK

    def _token_revoke(self, name: str, as_json: bool) -> int:
        tokens = list(APIToken.objects.filter(name=name.strip(), revoked_at__isnull=True))
        if not tokens:
            return self.fail(
                f"There is no active token named {name!r}.", as_json=as_json, status=404
            )
        for token in tokens:
            services.api_token_revoke(token=token, user=roles.OPERATOR)
        prefixes = [f"{t.prefix}…" for t in tokens]
        if as_json:
            self.emit_json({"revoked": len(tokens), "name": name, "prefixes": prefixes})
        else:
            self.stdout.write(f"revoked {len(tokens)} token(s) named {name}: {', '.join(prefixes)}")
        return EXIT_OK

    def _version(self, slug: str, number: int, as_json: bool) -> Version | int:
        """Version `number` of set `slug`, or the exit status of saying there is none."""
        version = Version.objects.of(slug, number).select_related("question_set").first()
        if version is not None:
            return version
        if not QuestionSet.objects.filter(slug=slug).exists():
            return self.fail(f"There is no set {slug}.", as_json=as_json, status=404)
        return self.fail(f"{slug} has no version {number}.", as_json=as_json, status=404)

    def do_label(
        self, *, slug: str, label: str, number: int, user: str, note: str, json: bool, **_: Any
    ) -> int:
        version = self._version(slug, number, json)
        if isinstance(version, int):
            return version
        actor = _user(user)
        before = Label.objects.filter(question_set=version.question_set, name=label).first()
        was = before.version.number if before else None
        services.label_move(
            question_set=version.question_set, name=label, version=version, actor=actor, note=note
        )
        if json:
            self.emit_json({"set": slug, "label": label, "version": number, "previous": was})
        elif was == number:
            self.stdout.write(f"{slug}: {label} already points at version {number}")
        else:
            moved = f" (was version {was})" if was is not None else " (new label)"
            self.stdout.write(f"{slug}: {label} → version {number}{moved}")
        return EXIT_OK

    def do_request_changes(
        self, *, slug: str, number: int, user: str, note: str, json: bool, **_: Any
    ) -> int:
        version = self._version(slug, number, json)
        if isinstance(version, int):
            return version
        version = services.version_request_changes(version=version, reviewer=_user(user), note=note)
        if json:
            self.emit_json({"set": slug, "version": number, "status": version.status})
        else:
            self.stdout.write(f"{slug} version {number}: changes requested")
        return EXIT_OK

    def do_diff(self, *, slug: str, from_number: int, to_number: int, json: bool, **_: Any) -> int:
        before = self._version(slug, from_number, json)
        if isinstance(before, int):
            return before
        after = self._version(slug, to_number, json)
        if isinstance(after, int):
            return after
        result = diff.document_diff(before.document, after.document)
        if json:
            self.emit_json(
                {"set": slug, "from": from_number, "to": to_number, **diff.as_json(result)}
            )
            return EXIT_OK
        counts = ", ".join(f"{n} {status}" for status, n in result.summary.items())
        self.stdout.write(f"{slug} v{from_number} → v{to_number}: {counts}")
        if result.reordered:
            self.stdout.write("  the questions are in another order")
        marks = {"added": "+", "removed": "-", "retyped": "!", "changed": "~"}
        for q in result.changed:
            self.stdout.write(f"{marks[q.status]} {q.id} ({q.type}): {q.status}")
            for change in q.changes:
                self.stdout.write(
                    f"    {change.label}: {change.kind}"
                    + (f" — {change.note}" if change.note else "")
                )
                old, new = diff.sides(change.segments)
                if old != new:
                    self.stdout.write(f"      - {old}")
                    self.stdout.write(f"      + {new}")
        return EXIT_OK

    def do_compare(
        self,
        *,
        slug: str,
        columns: list[str],
        state_name: str | None,
        threshold: float,
        csv: bool,
        json: bool,
        **_: Any,
    ) -> int:
        question_set = QuestionSet.objects.filter(slug=slug).first()
        if question_set is None:
            return self.fail(f"There is no set {slug}.", as_json=json, status=404)
        bad = [c for c in columns if not comparison.COLUMN.match(c)]
        if bad:
            raise Unusable(f"Unknown column {bad[0]!r}: use run:ID or vN:BACKEND.")
        if not 0 < threshold < 1:
            raise Unusable("--threshold lies strictly between 0 and 1")
        selection = comparison.Selection(columns=columns, threshold=threshold)
        if state_name is not None:
            state = question_set.sample_states.filter(name=state_name).first()
            if state is None:
                return self.fail(
                    f"{slug} has no sample state {state_name!r}.", as_json=json, status=404
                )
            selection.state = str(state.pk)
        built, streamed = comparison.stream(question_set, selection, roles.OPERATOR, ask_live=True)
        rows = list(streamed)  # every state, not one page of them
        problems = [f"{c.key}: {c.problem}" for c in built if c.problem]
        if problems:
            return self.fail("; ".join(problems), as_json=json)
        if json:
            self.stdout.write(comparison_formats.as_json(built, rows, selection))
        elif csv:
            self.stdout.write(comparison_formats.as_csv(built, rows), ending="")
        else:
            self.stdout.write(comparison_formats.as_text(built, rows, selection.noise))
        return EXIT_OK

    def do_batch(
        self,
        *,
        slug,
        number,
        label,
        backend,
        model,
        concurrency,
        tag,
        threshold,
        min_pass_rate,
        rerun_failed,
        json: bool,
        **_: Any,
    ) -> int:
        if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
            raise Unusable("--min-pass-rate is a fraction from 0 to 1")
        if rerun_failed is not None:
            given = {
                "--version": number,
                "--label": label,
                "--backend": backend,
                "--model": model,
                "--concurrency": concurrency,
                "--tag": tag,
                "--threshold": threshold,
            }
            clashing = [flag for flag, value in given.items() if value is not None]
            if clashing:
                raise Unusable(
                    f"--rerun-failed takes the run's own settings; drop {', '.join(clashing)}"
                )
            earlier = BatchRun.objects.filter(pk=rerun_failed).first()
            if earlier is None:
                return self.fail(f"There is no run {rerun_failed}.", as_json=json, status=404)
            run = services.batch_rerun_failed(run=earlier, user=roles.OPERATOR, enqueue=False)
        else:
            version = sets.version_named(slug, number=number, label=label)
            if version is None:
                which = f"label {label}" if label else f"version {number or ''}".strip()
                return self.fail(f"{slug} has no {which}.", as_json=json, status=404)
            run = services.batch_create(
                version=version,
                backend=backend or backends.DEFAULT,
                user=roles.OPERATOR,
                concurrency=(
                    run_defaults.DEFAULT_CONCURRENCY if concurrency is None else concurrency
                ),
                tag=tag or "",
                threshold=run_defaults.DEFAULT_THRESHOLD if threshold is None else threshold,
                model=model,
                enqueue=False,
            )

        services.batch_execute(run.pk, on_progress=self.progress)
        run.refresh_from_db()
        summary = runs.run_summary(run)
        if json:
            self.emit_json(summary)
        else:
            self.stdout.write(
                f"run {run.pk}: {run.question_set.slug} v{run.version.number} via {run.backend}: "
                f"{summary['answered']}/{summary['states']} answered, {summary['failed']} failed, "
                f"pass rate {stats.rate_words(summary['passed'], summary['checked'])}, "
                f"{summary['duration_ms']} ms"
                + ("" if summary["calibrated"] else " (calibrated: false)")
            )
            for qid, q in summary["per_question"].items():
                if q["checked"]:
                    self.stdout.write(
                        f"  {qid}: {q['passed']}/{q['checked']} passed, "
                        f"{stats.rate_words(q['passed'], q['checked'])}"
                    )
        below = (
            min_pass_rate is not None
            and summary["pass_rate"] is not None
            and summary["pass_rate"] < min_pass_rate
        )
        if summary["failed"] or below:
            if below and not json:
                self.stderr.write(
                    f"pass rate {stats.rate_words(summary['passed'], summary['checked'])} "
                    f"is below {min_pass_rate:.1%}"
                )
            return EXIT_FAILED
        return EXIT_OK

    def do_standin(self, *, port: int, latency_ms: float, **_: Any) -> int:
        from questions.dev import standin

        try:
            server = standin.make_server(port, latency_ms)
        except OSError as exc:
            raise Unusable(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
        host, bound = server.server_address[:2]
        self.stdout.write(f"stand-in provider (not Jev) on http://{host}:{bound}/v1/systemone")
        self.stdout.write(
            f"stand-in chat model (llm wire) on http://{host}:{bound}/v1/chat/completions"
        )
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return EXIT_OK

    def do_demo(self, *, force: bool, **_: Any) -> int:
        if not (settings.DEBUG or force):
            self.stderr.write(
                "Refused: the demo users have the password `demo`. Run it with "
                "DJANGO_DEBUG=1, or add --force if you mean it."
            )
            return EXIT_FAILED
        done = demo.demo_load()
        for line in done:
            self.stdout.write(f"created {line}")
        if not done:
            self.stdout.write("the demo is loaded already")
        self.stdout.write(f"sign in as author or reviewer, password {demo.PASSWORD}")
        return EXIT_OK

    # validate --------------------------------------------------------------------------------

    def do_validate(
        self, *, file: str, json: bool = False, state_file: list[str] | None = None, **_: Any
    ) -> int:
        value = read_json_file(file)
        states = [read_json_file(name) for name in state_file or ()]
        result = spec.validate(
            value, limits=settings.DECISIONS_LIMITS, sample_states=states or None
        )
        if json:
            out = result.as_dict()
            if not result.valid:
                out["status"] = 422
                out["detail"] = _summary(result)
            self.emit_json(out)
        else:
            for issue in result.errors:
                self.stdout.write(f"error: {issue}")
            for issue in result.warnings:
                self.stdout.write(f"warning: {issue}")
            self.stdout.write(_summary(result))
        return EXIT_OK if result.valid else EXIT_FAILED


def _summary(result: spec.Validation) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    warnings = count(len(result.warnings), "warning")
    if result.document is None:
        first = result.errors[0]
        return f"invalid: {count(len(result.errors), 'error')}, {warnings}; first: {first}"
    n = len(result.document.questions)
    return (
        f"valid: {result.form} document, {count(n, 'question')}, {warnings}; sha256 {result.sha256}"
    )
