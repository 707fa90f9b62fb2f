"""`questions snippet` and `questions gate`: the subcommands of the console's command line that
take an approved set out into the application — code that calls it (`questions.snippets`), and
a CI gate on it (`questions.services.gates`, judged by `questions.gate`).

The gate's exit status: 0 when it holds, 1 when a bound or a question's floor is crossed, a
labelled state got no answer or (with --strict-lints) a lint warning is open, 2 when there is
nothing to gate (no such set or label, no labelled state, a backend that cannot be asked) or
the arguments are unusable — so a CI can tell a version that fails from a gate that could not
run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from questions import exports, roles
from questions.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNUSABLE,
    Console,
    add_json,
    add_label,
    add_set,
)
from questions.core import gate, snippets
from questions.engine import backends
from questions.engine.backends import recorded
from questions.models import IngestSettings, QuestionSet
from questions.services import Refusal
from questions.services import gates as gate_services

DEFAULT_GATE_BACKEND = recorded.NAME  # a replay: no network, no key


def add_parsers(sub: Any) -> None:
    """The `snippet` and `gate` subcommands."""
    code = sub.add_parser(
        "snippet",
        help="print code that calls a label's approved questions",
        description="Print a ready call of the runtime's POST /api/decisions (curl, Python "
        "with httpx, TypeScript with fetch) with the questions of label L exactly as exported "
        "and a placeholder state, reading RUNTIME_URL and RUNTIME_TOKEN from the environment; "
        "or (sdk) a call of the provider itself through the official typesafe-sdk.",
    )
    add_set(code)
    add_label(code, required=True)
    code.add_argument("--lang", required=True, choices=snippets.LANGUAGES, dest="language")
    add_json(code, "on failure, print JSON")
    code.set_defaults(handler=do_snippet)

    check = sub.add_parser(
        "gate",
        help="a CI gate: run a label's approved version over the labelled states and judge it",
        description="Run the approved version label L points at over SLUG's labelled sample "
        "states (through --backend, by default recorded: no network, no key) and hold it "
        "against the bounds given (with --strict-lints, also against its lints: no warning "
        "open but those accepted with a reason). Exit 0 when every bound holds, 1 when one is "
        "crossed (or a labelled state got no answer, or with --strict-lints a lint warning is "
        "open), 2 when there is nothing to gate or the arguments are unusable.",
    )
    add_set(check)
    add_label(check, required=True)
    check.add_argument(
        "--backend",
        default=DEFAULT_GATE_BACKEND,
        choices=list(backends.NAMES),
        help=f"default {DEFAULT_GATE_BACKEND}",
    )
    for name, (flag, floor, what) in gate.BOUNDS.items():
        check.add_argument(
            flag,
            type=float,
            dest=name,
            metavar="X",
            help=f"the {'lowest' if floor else 'highest'} {what} that passes",
        )
    check.add_argument(
        gate.LINTS_FLAG,
        action="store_true",
        dest="strict_lints",
        help="fail (exit 1) while the version has a lint warning open: each is fixed, or "
        "accepted with a reason (questions lint-accept); a bound of its own, `lints`",
    )
    check.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    add_json(check, "print one JSON object")
    check.set_defaults(handler=do_gate)


def _no_label(slug: str, label: str) -> str:
    """Why `slug` has no approved version under `label`: no such set, or no such label."""
    if not QuestionSet.objects.filter(slug=slug).exists():
        return f"There is no set {slug}."
    return f"{slug} has no label {label!r} on an approved version."


def do_snippet(cli: Console, *, slug: str, label: str, language: str, json: bool, **_: Any) -> int:
    version = exports.exportable_version(slug, label=label)
    if version is None:
        return cli.fail(_no_label(slug, label), as_json=json, status=404)
    export = exports.export_document(version)
    keep_one_in = IngestSettings.of(version.question_set).keep_one_in
    cli.stdout.write(snippets.snippet(language, export, label, keep_one_in), ending="")
    return EXIT_OK


def _cannot_gate(cli: Console, detail: str, status: int, as_json: bool) -> int:
    if as_json:
        cli.emit_json({"status": status, "detail": detail, "ok": False})
    else:
        cli.stderr.write(f"nothing gated: {detail}")
    return EXIT_UNUSABLE


def do_gate(
    cli: Console,
    *,
    slug: str,
    label: str,
    backend: str,
    junit: str | None,
    json: bool,
    strict_lints: bool = False,
    **options: Any,
) -> int:
    bounds = gate.Bounds(**{name: options.get(name) for name in gate.BOUNDS})
    problem = bounds.problem()
    if problem:
        return _cannot_gate(cli, problem, 400, json)
    version = exports.exportable_version(slug, label=label)
    if version is None:
        return _cannot_gate(cli, _no_label(slug, label), 404, json)
    try:
        run, result = gate_services.gate_run(
            version=version,
            backend=backend,
            user=roles.OPERATOR,
            bounds=bounds,
            strict_lints=strict_lints,
        )
    except Refusal as exc:
        return _cannot_gate(cli, str(exc), exc.status, json)
    about = {
        "set": slug,
        "label": label,
        "version": version.number,
        "sha256": version.sha256,
        "backend": run.backend,
        "model": run.model,
        "run": run.pk,
    }
    if junit:
        text = gate.junit_xml(
            result,
            suite=f"questions gate {slug} {label} v{version.number}",
            classname=f"{slug}.{label}",
        )
        try:
            Path(junit).write_text(text, encoding="utf-8")
        except OSError as exc:
            return _cannot_gate(cli, f"cannot write {junit}: {exc.strerror or exc}", 400, json)
    if json:
        cli.emit_json(gate.as_json(result, about))
    else:
        _print_gate(cli, result, about)
    return EXIT_OK if result.ok else EXIT_FAILED


def _print_gate(cli: Console, result: gate.Result, about: dict[str, Any]) -> None:
    m = result.measured
    cli.stdout.write(
        f"gate {about['set']} {about['label']} (v{about['version']}) via {about['backend']}, "
        f"run {about['run']}: {m.states} labelled states, "
        f"{m.states - len(m.unanswered)} answered — {'holds' if result.ok else 'FAILS'}"
    )
    for b in result.bounds:
        cli.stdout.write(f"  {'ok  ' if b.ok else 'FAIL'} {b.name}: {b.detail}")
    for q in result.questions:
        mark = "skip" if q.skipped else "ok  " if q.ok else "FAIL"
        cli.stdout.write(f"  {mark} question {q.measure.question}: {q.message}")
    if not result.ok:
        crossed = [b.name for b in result.bounds if not b.ok]
        crossed += [f"question {q.measure.question}" for q in result.questions if not q.ok]
        cli.stderr.write(f"the gate fails: {', '.join(crossed)}")
