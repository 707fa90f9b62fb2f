"""`questions snippet` and `questions gate`: the subcommands of the console's command line
(`questions.management.commands.questions`) that take an approved set out into the application
— code that calls it (`questions.snippets`), and a CI gate on it (`questions.services.gates`,
judged by `questions.gate`).

The gate's exit status: 0 when it holds, 1 when a bound or a question's floor is crossed or a
labelled state got no answer, 2 when there is nothing to gate (no such set or label, no labelled
state, a backend that cannot be asked) or the arguments are unusable — so a CI can tell a
version that fails from a gate that could not run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from questions import exports, roles
from questions.core import gate, snippets
from questions.engine import backends
from questions.engine.backends import recorded
from questions.models import QuestionSet
from questions.services import Refusal
from questions.services import gates as gate_services

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
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
    code.add_argument("--set", required=True, dest="slug", metavar="SLUG")
    code.add_argument("--label", required=True, metavar="L")
    code.add_argument("--lang", required=True, choices=snippets.LANGUAGES, dest="language")
    code.add_argument("--json", action="store_true", help="on failure, print JSON")

    check = sub.add_parser(
        "gate",
        help="a CI gate: run a label's approved version over the labelled states and judge it",
        description="Run the approved version label L points at over SLUG's labelled sample "
        "states (through --backend, by default recorded: no network, no key) and hold it "
        "against the bounds given. Exit 0 when every bound holds, 1 when one is crossed (or a "
        "labelled state got no answer), 2 when there is nothing to gate or the arguments are "
        "unusable.",
    )
    check.add_argument("--set", required=True, dest="slug", metavar="SLUG")
    check.add_argument("--label", required=True, metavar="L")
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
    check.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    check.add_argument("--json", action="store_true", help="print one JSON object")


def _no_label(slug: str, label: str) -> str:
    """Why `slug` has no approved version under `label`: no such set, or no such label."""
    if not QuestionSet.objects.filter(slug=slug).exists():
        return f"There is no set {slug}."
    return f"{slug} has no label {label!r} on an approved version."


class ApplicationCommands:
    """The handlers, mixed into the management command (`fail`, `emit_json`, `stdout`)."""

    def do_snippet(self, *, slug: str, label: str, language: str, json: bool, **_: Any) -> int:
        version = exports.exportable_version(slug, label=label)
        if version is None:
            return self.fail(_no_label(slug, label), as_json=json, status=404)
        export = exports.export_document(version)
        self.stdout.write(snippets.snippet(language, export, label), ending="")
        return EXIT_OK

    def _cannot_gate(self, detail: str, status: int, as_json: bool) -> int:
        if as_json:
            self.emit_json({"status": status, "detail": detail, "ok": False})
        else:
            self.stderr.write(f"nothing gated: {detail}")
        return EXIT_UNUSABLE

    def do_gate(
        self, *, slug: str, label: str, backend: str, junit: str | None, json: bool, **options: Any
    ) -> int:
        bounds = gate.Bounds(**{name: options.get(name) for name in gate.BOUNDS})
        problem = bounds.problem()
        if problem:
            return self._cannot_gate(problem, 400, json)
        version = exports.exportable_version(slug, label=label)
        if version is None:
            return self._cannot_gate(_no_label(slug, label), 404, json)
        try:
            run, result = gate_services.gate_run(
                version=version, backend=backend, user=roles.OPERATOR, bounds=bounds
            )
        except Refusal as exc:
            return self._cannot_gate(str(exc), exc.status, json)
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
                return self._cannot_gate(f"cannot write {junit}: {exc.strerror or exc}", 400, json)
        if json:
            self.emit_json(gate.as_json(result, about))
        else:
            self._print_gate(result, about)
        return EXIT_OK if result.ok else EXIT_FAILED

    def _print_gate(self, result: gate.Result, about: dict[str, Any]) -> None:
        m = result.measured
        self.stdout.write(
            f"gate {about['set']} {about['label']} (v{about['version']}) via {about['backend']}, "
            f"run {about['run']}: {m.states} labelled states, "
            f"{m.states - len(m.unanswered)} answered — {'holds' if result.ok else 'FAILS'}"
        )
        for b in result.bounds:
            self.stdout.write(f"  {'ok  ' if b.ok else 'FAIL'} {b.name}: {b.detail}")
        for q in result.questions:
            mark = "skip" if q.skipped else "ok  " if q.ok else "FAIL"
            self.stdout.write(f"  {mark} question {q.measure.question}: {q.message}")
        if not result.ok:
            crossed = [b.name for b in result.bounds if not b.ok]
            crossed += [f"question {q.measure.question}" for q in result.questions if not q.ok]
            self.stderr.write(f"the gate fails: {', '.join(crossed)}")
