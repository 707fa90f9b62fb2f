"""Rules the suite keeps about itself: nothing in it depends on speed, and no test module
imports another (what several share lives in conftest.py, helpers.py, providers.py,
strategies.py and factories.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent


def test_hypothesis_has_no_deadline_for_any_test():
    """A loaded machine (CI runs two suites side by side on two cores) must not fail a property
    test by its speed; the example counts stay each test's own."""
    assert settings.default.deadline is None
    assert settings(max_examples=7).deadline is None
    assert settings(max_examples=7).max_examples == 7


def _imported_modules(tree: ast.AST) -> list[str]:
    """Every module an import names, module-level or inside a function; a relative import
    keeps its leading dots, and `from a import b` names `a.b` too (b may be a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.append(module)
            if "test_" not in module:  # `from tests import test_x` names a module too
                found.extend(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_no_test_module_imports_another():
    offending = []
    for path in sorted(TESTS.rglob("*.py")):
        for module in _imported_modules(ast.parse(path.read_text(), str(path))):
            ours = module.startswith(("tests", "."))
            if ours and any(part.startswith("test_") for part in module.split(".")):
                offending.append(f"{path.relative_to(TESTS.parent)}: {module}")
    assert offending == []
