"""The command line reference (`docs/cli.md`), written from the argument parsers themselves.

`make docs` writes it; `tests/test_docs.py` fails when the file differs from what `render()`
makes, so the reference cannot drift from the code. Every word about a subcommand comes from its
parser: `help` (the one-line summary), `description`, each argument's `help`, and `epilog`
(what its JSON holds, its exit codes).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

PROG = "manage.py questions"

HEADER = """\
# Command line reference

<!-- Written by `make docs` from the argument parsers (questions/cli/reference.py); edit the
parsers, not this file: a test fails when it is stale. -->

One management command, `questions`, with subcommands:
`.venv/bin/python manage.py questions SUBCOMMAND …`. Like every `manage.py` command it reads the
settings first: outside `make run` (which sets `DJANGO_DEBUG=1`) set `DJANGO_SECRET_KEY`, or
`DJANGO_DEBUG=1` on your own machine; without either, a command says so in one line and exits 2.

Every subcommand exits 0 on success, 1 when refused or failed (the reason on stderr; with
`--json` a JSON object with `status` and `detail`), 2 for unusable arguments, an unknown
`--user` or an unreadable file. A `FILE` may be `-` for standard input; a document `FILE` may be
a bare questions map, a `POST /api/decisions` body (`state`, `questions`, optional `profile`), a
provider request body (`state`, `model`, `questions`) or an export document
(`"format": "decision-console/question-set@1"`). Errors and warnings print one a line:

```
error: questions.intent.criteria: choice `intent` has 256 options; at most 255 [too_many_options]
warning: questions.intent.criteria.none: option `none` of `intent` is named only by its id; …
invalid: 1 error, 1 warning; first: …
```
"""


def parser() -> argparse.ArgumentParser:
    """The command's parser as `manage.py questions` builds it (Django's own options aside)."""
    from django.core.management.base import CommandParser

    from questions.cli import commands

    top = CommandParser(prog=PROG)
    commands.add_subcommands(top)
    return top


def subcommands(top: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order they are declared."""
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name) or "", sub


def _usage(sub: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(prog=sub.prog, width=100)
    formatter.add_usage(sub.usage, sub._actions, sub._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _options(sub: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(f"`{flag}`" for flag in action.option_strings)
            takes = action.nargs != 0
            if takes:
                name += f" `{action.metavar or action.dest.upper()}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        about = action.help or ""
        if action.choices:
            about = (
                (about + " " if about else "")
                + "one of "
                + ", ".join(f"`{choice}`" for choice in action.choices)
            )
        if action.required and action.option_strings:
            about = (about + " " if about else "") + "(required)"
        default = action.default
        shown = default not in (None, False, "", [], argparse.SUPPRESS)
        if action.option_strings and shown and f"default {default}" not in about:
            about += f" (default `{default}`)"
        if isinstance(action, argparse._AppendAction):
            about += " (repeatable)"
        rows.append(f"| {name} | {_cell(about.strip())} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def render() -> str:
    top = parser()
    entries = list(subcommands(top))
    lines = [HEADER, "| subcommand | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#{name}) | {_cell(about)} |" for name, about, _ in entries]
    for name, about, sub in entries:
        lines += ["", f"## {name}", "", about[:1].upper() + about[1:] + ".", ""]
        lines += ["```", _usage(sub), "```", ""]
        if sub.description:
            lines += [sub.description, ""]
        lines += _options(sub)
        if sub.epilog:
            lines += [sub.epilog, ""]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    """`make docs`: write docs/cli.md (any settings will do: the parsers read none)."""
    import os
    from pathlib import Path

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    django.setup()
    target = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    target.write_text(render())
    print(
        f"wrote {target.relative_to(Path.cwd()) if target.is_relative_to(Path.cwd()) else target}"
    )


if __name__ == "__main__":
    main()
