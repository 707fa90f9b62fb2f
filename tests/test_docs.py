"""The docs are tested: the README stays a front door, every link resolves, every setting the docs
name exists (and every one the console reads is in the settings table), the command line
reference is the one the parsers write, and the README's tour runs on a fresh demo."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from questions.cli import reference as cli_reference
from questions.core import spec
from tests.helpers import wait_for

pytestmark = pytest.mark.xdist_group("docs")

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A setting as the docs name it (a CI job's `secrets.NAME` is the CI's own, not the console's).
SETTING = re.compile(
    r"(?<!secrets\.)\b((?:DECISIONS__|DJANGO_)[A-Z0-9_]*[A-Z0-9]"
    r"|(?:TYPESAFE|RUNTIME|OPENROUTER|LLM|CONSOLE)_[A-Z_]*[A-Z])\b"
)
READ = re.compile(r"_(?:env|flag|number|count)\(\s*\"([A-Z][A-Z0-9_]+)\"")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def links(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for match in LINK.finditer(text):
        target = match.group(1)
        if not re.match(r"[a-z]+:", target):
            yield target


def test_the_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the manual lives in docs/"
    for page in ("authoring", "reviewing", "integrating", "operating", "cli", "architecture"):
        assert f"](docs/{page}.md)" in README.read_text()


def test_every_page_is_reached_from_the_readme_or_another_page():
    linked = {
        (page.parent / target.split("#")[0]).resolve()
        for page in PAGES
        for target in links(page)
        if target.split("#")[0]
    }
    orphans = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked]
    assert not orphans, f"no page links to {orphans}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_internal_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        missing = not file.exists()
        if missing or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_no_page_sends_a_reader_outside_the_project():
    for page in PAGES:
        assert "../shared" not in page.read_text(), page.name


def _code() -> str:
    sources = [*(ROOT / "console").glob("*.py"), *(ROOT / "questions").rglob("*.py")]
    sources += [ROOT / "Makefile", ROOT / "Procfile", ROOT / "console" / "serve"]
    sources += [ROOT / "console" / "run"]
    return "\n".join(path.read_text() for path in sources if path.exists())


#: a page of past measurements names the settings of its day (benchmarks-archive.md)
CURRENT = [page for page in PAGES if not page.stem.endswith("-archive")]


def test_every_setting_the_docs_name_exists():
    code = _code()
    named = {m.group(1) for page in CURRENT for m in SETTING.finditer(page.read_text())}
    assert "DECISIONS__MODEL" in named  # the pattern finds them
    missing = sorted(name for name in named if f"{name}" not in code)
    assert not missing, f"the docs name settings no code reads: {missing}"


def test_every_variable_the_console_reads_is_in_the_settings_table():
    operating = (DOCS / "operating.md").read_text()
    table = operating[operating.index("| variable | default | meaning |") :]
    table = table[: table.index("\n\n")]
    read = set(READ.findall((ROOT / "console" / "settings.py").read_text()))
    read |= set(spec.LIMIT_ENV.values())
    assert "DECISIONS__TIMEOUT_SECONDS" in read  # the pattern finds them
    missing = sorted(name for name in read if f"`{name}`" not in table)
    assert not missing, f"docs/operating.md's settings table lacks {missing}"


def test_the_command_line_reference_is_the_one_the_parsers_write():
    written = (DOCS / "cli.md").read_text()
    assert written == cli_reference.render(), "docs/cli.md is stale: run `make docs`"


def test_the_reference_names_every_subcommand():
    text = (DOCS / "cli.md").read_text()
    for name, _, _ in cli_reference.subcommands(cli_reference.parser()):
        assert f"\n## {name}\n" in text


def _tour() -> str:
    text = README.read_text()
    tour = text[text.index("## A five-minute tour") :]
    return re.search(r"```sh\n(.*?)```", tour, re.S).group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _demo_env(database: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "console.settings",
    }


@pytest.fixture(scope="module")
def demo_database(tmp_path_factory) -> Path:
    """A fresh demo database (`migrate`, then `questions demo`, as `make run` does), made once
    for the module; each test gets a copy of it (`fresh_demo`), so none sees another's writes."""
    database = tmp_path_factory.mktemp("demo") / "demo.sqlite3"
    manage = [sys.executable, "manage.py"]
    for step in (["migrate", "--noinput", "-v0"], ["questions", "demo"]):
        subprocess.run(
            [*manage, *step], cwd=ROOT, env=_demo_env(database), check=True, capture_output=True
        )
    return database


@pytest.fixture
def fresh_demo(demo_database, tmp_path) -> dict[str, str]:
    """The environment of a console on its own copy of the fresh demo database."""
    database = tmp_path / "demo.sqlite3"
    shutil.copyfile(demo_database, database)
    return _demo_env(database)


def _wait_until_it_answers(process: subprocess.Popen, url: str) -> None:
    """Wait until `url` answers at all (any HTTP status), or fail once `process` has ended."""

    def answered() -> bool:
        if process.poll() is not None:
            pytest.fail(f"{url}'s server exited ({process.returncode}) before it answered")
        try:
            urllib.request.urlopen(url, timeout=2)
        except urllib.error.HTTPError:
            return True  # it answered
        except OSError:
            return False
        return True

    wait_for(answered, 120, f"{url} to answer")


@pytest.mark.slow
def test_the_readme_tour_runs_on_a_fresh_demo(fresh_demo):
    """The tour's commands, as written, against `make run`'s console and stand-in on a fresh
    demo database (only the ports differ)."""
    env = fresh_demo
    manage = [sys.executable, "manage.py"]
    port, standin_port = _free_port(), _free_port()
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    standin = subprocess.Popen(
        [*manage, "questions", "standin", "--port", str(standin_port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for process, url in (
            (server, f"http://127.0.0.1:{port}/healthz"),
            (standin, f"http://127.0.0.1:{standin_port}/api/decisions"),  # a GET: its 405
        ):
            _wait_until_it_answers(process, url)
        script = _tour().replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        script = script.replace("127.0.0.1:8765", f"127.0.0.1:{standin_port}")
        script = script.replace(".venv/bin/python", sys.executable)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        for process in (server, standin):
            process.terminate()
            process.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "valid: export document, 3 questions" in done.stdout + done.stderr
    # the export page's Python code printed the stand-in runtime's answers, under gestures' ids
    printed = json.loads(done.stdout[done.stdout.index("{\n") : done.stdout.index("\n}\n") + 2])
    assert list(printed) == ["intent", "start", "energy"]
    assert [a["type"] for a in printed.values()] == ["choice", "noul", "score"]
    assert re.search(
        r"gestures v2 via recorded: \d+/\d+ answered, 0 failed, pass rate", done.stdout
    )


@pytest.mark.slow
def test_the_documented_ci_gate_exits_0_on_a_fresh_demo(fresh_demo, tmp_path):
    """The gate command of the README's CI job, as written (its JUnit file in a scratch
    directory), on a fresh demo database: the demo approves each version on its finished run,
    so the flip bound has evidence to compare with, and its production meets the bounds."""
    env = fresh_demo
    manage = [sys.executable, "manage.py"]
    job = re.search(r"```yaml\n(.*?)```", README.read_text(), re.S).group(1)
    command = re.search(r"manage\.py (questions gate .*)", job).group(1)
    args = [str(tmp_path / a) if a == "gate.xml" else a for a in command.split()]
    done = subprocess.run(
        [*manage, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "— holds" in done.stdout and "max_flip_rate: 0/" in done.stdout
    assert (tmp_path / "gate.xml").exists()

    """tests/test_gate.py runs the gate of docs/integrating.md's job; the README shows it too."""
    job = re.compile(r"```yaml\n(.*?)```", re.S)
    integrating = (DOCS / "integrating.md").read_text()
    assert job.search(README.read_text()).group(1) == job.search(integrating).group(1)
