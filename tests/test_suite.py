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


def test_every_test_is_in_a_ci_pass_and_every_database_test_runs_on_postgresql():
    """`.ci/run`'s passes, by their `-m` expressions: whatever marks a test carries, at least
    one pass selects it; a test that uses the database (not `pure`) runs on PostgreSQL unless
    it is a route sweep (`one_database`) or a browser test; a `both_databases` one on SQLite
    too; a browser test in the browser pass, and the `browser_smoke` one on PostgreSQL too."""
    import itertools
    import re

    from _pytest.mark.expression import Expression

    script = (TESTS.parent / ".ci" / "run").read_text()
    passes = {
        name: Expression.compile(quoted or bare)
        for name, quoted, bare in re.findall(
            r'^suite (\S+) .*? -m (?:"([^"]+)"|(\S+))', script.replace("\\\n", " "), re.M
        )
    }
    assert set(passes) == {"sqlite", "postgres", "sqlite-browser"}
    marks = ("pure", "e2e", "one_database", "both_databases", "browser_smoke")
    for chosen in itertools.product((False, True), repeat=len(marks)):
        held = {mark for mark, on in zip(marks, chosen, strict=True) if on}
        if "pure" in held and held & {"e2e", "both_databases", "browser_smoke", "one_database"}:
            continue  # conftest never marks a browser test or a module with a database pure
        if "browser_smoke" in held and "e2e" not in held:
            continue
        if "e2e" in held and held & {"both_databases", "one_database"}:
            continue  # marks of the modules that test the database or sweep the routes
        into = {name for name, expr in passes.items() if expr.evaluate(held.__contains__)}
        assert into, held
        if "e2e" in held:
            assert "sqlite-browser" in into and "sqlite" not in into, held
            assert ("postgres" in into) == ("browser_smoke" in held), held
        elif "pure" not in held and "one_database" not in held:
            assert "postgres" in into, held
        if "both_databases" in held:
            assert "sqlite" in into, held
