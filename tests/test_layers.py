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


# --- the packages' layers (docs/architecture.md) -----------------------------------------------


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in _code()}


def _edges(path: Path) -> set[str]:
    """The project's modules `path` imports, at its top or inside a function: `from a import b`
    is an arrow to `a.b` when that is a module of ours, else to `a`."""
    tree = ast.parse(path.read_text())
    typing_only = {  # `if TYPE_CHECKING:` imports are read by a type checker, never run
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in MODULES
                else node.module
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != _module(path):
                found.add(name)
    return found


GRAPH = {name: _edges(path) for name, path in MODULES.items()}


def _circles() -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_through_others():
    assert _circles() == []


def _in(package: str) -> list[Path]:
    return [p for name, p in sorted(MODULES.items()) if name.startswith(f"questions.{package}")]


#: what the pure package may take from Django: HTML escaping for the server-rendered charts
CORE_DJANGO = ("django.utils.html", "django.utils.safestring")
#: the HTTP clients: the pure package asks nobody
HTTP = ("httpx", "httpcore", "http.client", "urllib.request", "requests", "aiohttp")


@pytest.mark.parametrize("path", _in("core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_pure_package_imports_no_orm_no_http_and_no_other_package(path):
    imported = _imports(path)
    django = {m for m in imported if m.split(".")[0] == "django"}
    assert {m for m in django if not m.startswith(CORE_DJANGO)} == set()
    assert {m for m in imported if m.startswith(HTTP)} == set()
    outside = {m for m in _edges(path) if not m.startswith("questions.core")}
    assert outside == set()


#: what the engine may not reach: it is driven by the services and knows no page or command
ABOVE_THE_ENGINE = (
    "questions.services",
    "questions.selectors",
    "questions.views",
    "questions.cli",
    "questions.dev",
    "questions.management",
)


@pytest.mark.parametrize("path", _in("engine"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_engine_reaches_down_only(path):
    assert {m for m in _edges(path) if m.startswith(ABOVE_THE_ENGINE)} == set()


@pytest.mark.parametrize("path", _in("cli"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_command_line_never_imports_the_command_that_dispatches_to_it(path):
    assert {m for m in _edges(path) if m.startswith("questions.management")} == set()


#: the contract may be long: one document of rules read in one place (issue 36 names it)
THE_CONTRACT = ("core/spec.py", "core/lints.py")
ROOM = 600


def test_no_module_but_the_contract_is_over_600_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _code()
        if (n := len(p.read_text().splitlines())) > ROOM
        and str(p.relative_to(ROOT)) not in THE_CONTRACT
    }
    assert long == {}
