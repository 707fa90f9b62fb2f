"""The layers keep to their side: the domain knows no HTTP and imports no view; a template tag
reads what its template was given, never a view module or the database."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "questions"
VIEWS = ROOT / "views"


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _code(*, outside: tuple[Path, ...] = ()) -> list[Path]:
    return sorted(
        p
        for p in ROOT.rglob("*.py")
        if "migrations" not in p.parts and not any(p.is_relative_to(o) for o in outside)
    )


@pytest.mark.parametrize(
    "path", _code(outside=(VIEWS, ROOT / "urls.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_nothing_below_the_views_imports_a_view(path):
    assert not {m for m in _imports(path) if m.startswith("questions.views")}


def test_the_comparison_takes_plain_values_not_a_request():
    imported = _imports(ROOT / "selectors" / "comparison.py")
    assert not {m for m in imported if m.startswith("django.http")}
    assert "QueryDict" not in (ROOT / "selectors" / "comparison.py").read_text()


@pytest.mark.parametrize("path", sorted((ROOT / "templatetags").glob("*.py")), ids=lambda p: p.name)
def test_a_template_tag_neither_imports_a_view_nor_queries(path):
    assert not {m for m in _imports(path) if m.startswith("questions.views")}
    readers = ("questions.selectors", "questions.exports", "questions.services")
    assert not {m for m in _imports(path) if m.startswith(readers)}  # they query
    tree = ast.parse(path.read_text())
    managers = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "objects"]
    assert managers == []


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        ("version N of set S", r"question_set__slug=slug,\s*number="),
        ("the open draft", r"filter\(status=Version\.Status\.DRAFT\)"),
        ("approved by label", r"status=Version\.Status\.APPROVED[^)]*\)\s*if label"),
    ],
)
def test_a_version_lookup_is_written_once_as_a_queryset_method(what, pattern):
    import re

    found = [
        str(p.relative_to(ROOT))
        for p in _code()
        if not p.is_relative_to(ROOT / "models") and re.search(pattern, p.read_text())
    ]
    assert found == [], what


@pytest.mark.django_db
def test_the_version_queryset_and_both_export_readers_agree():
    from questions import exports, services
    from questions.models import Version
    from tests import factories

    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    assert Version.objects.of("s", 1).get() == qs.versions.open_draft()
    v1 = services.version_submit(version=qs.versions.open_draft(), author=writer)
    assert qs.versions.open_draft() is None
    services.version_approve(
        version=v1, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    draft = services.version_draft_from(version=v1, author=writer)
    assert qs.versions.open_draft() == draft
    asks = [
        {"label": "production"},
        {"number": 1},
        {"number": 2},  # a draft: not approved
        {"label": "staging"},
        {},
        {"label": "production", "number": 1},  # both: never a fallback
    ]
    for ask in asks:
        found = Version.objects.approved("s", **ask).first()
        ref = exports.export_ref("s", **ask)
        assert found == exports.exportable_version("s", **ask)
        assert (found.pk if found else None) == (ref.version_id if ref else None), ask
    assert Version.objects.approved("other", number=1).first() is None


def test_the_export_reads_no_selector():
    """The export document stands on its own: selectors may import it, never the reverse (the
    two importing each other would be a circle)."""
    assert not {m for m in _imports(ROOT / "exports.py") if m.startswith("questions.selectors")}


#: a view reads the request, calls one service or selector and renders: this many lines at most
VIEW_LINES = 50


@pytest.mark.parametrize("path", sorted(VIEWS.glob("*.py")), ids=lambda p: p.name)
def test_no_view_function_is_a_room_of_its_own(path):
    lengths = {
        n.name: n.end_lineno - n.lineno + 1
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.FunctionDef)
    }
    assert {name: n for name, n in lengths.items() if n > VIEW_LINES} == {}
