"""The command line's package keeps its shape: the management command only dispatches, the
groups take what they share from `questions.cli.base` and never from the command, and every
subcommand has its handler."""

import argparse
import ast
from pathlib import Path

import pytest

from questions.cli import base, commands, reference

ROOT = Path(__file__).resolve().parent.parent / "questions"
CLI = sorted((ROOT / "cli").glob("*.py"))
COMMAND = ROOT / "management" / "commands" / "questions.py"


def _imports(path: Path) -> set[str]:
    """Every `questions…` module `path` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return {m for m in found if m.startswith("questions")}


@pytest.mark.parametrize("path", CLI, ids=lambda p: p.name)
def test_no_cli_module_imports_the_management_command(path):
    assert not {m for m in _imports(path) if m.startswith("questions.management")}


@pytest.mark.parametrize(
    "path", [p for p in CLI if p.name not in ("commands.py", "reference.py")], ids=lambda p: p.name
)
def test_a_group_takes_from_the_cli_package_only_its_base(path):
    """So the package has no circle: base ← the groups ← commands ← the command, reference."""
    within = {m for m in _imports(path) if m.startswith("questions.cli")}
    assert within <= {"questions.cli.base"} | {f"questions.cli.base.{n}" for n in dir(base)}
    if path.name == "base.py":
        assert within == set()


@pytest.mark.parametrize("path", [*CLI, COMMAND], ids=lambda p: p.name)
def test_no_room_of_the_command_line_is_big(path):
    lines = len(path.read_text().splitlines())
    assert lines < (150 if path == COMMAND else 600), f"{path.name}: {lines} lines"


def test_the_command_only_dispatches():
    tree = ast.parse(COMMAND.read_text())
    functions = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert functions == ["add_arguments", "handle"]


def test_every_subcommand_has_a_handler_of_its_group():
    declared = {}
    for group in commands.GROUPS:
        sub = argparse.ArgumentParser().add_subparsers()
        group.add_parsers(sub)
        for name, parser in sub.choices.items():
            handler = parser.get_default("handler")
            assert callable(handler) and handler.__module__ == group.__name__, name
            declared[name] = handler
    assert [name for name, _, _ in reference.subcommands(reference.parser())] == list(declared)
