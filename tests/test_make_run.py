"""`make run` as a trial starts it: the demo (its compare link under the console's own address),
the local stand-in, the task workers and runserver — and a TERM stops every process it started,
sent to make (a `make run &` in the background) or to the script that owns them (`console/run`,
make's child), as Ctrl-C does in a terminal. Before, a TERM to either waited on runserver."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[1]
#: generous: a loaded two-core machine migrates and loads the demo in 10–30 s
START_SECONDS = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group(pgid: int) -> set[int]:
    """The live processes (zombies aside) of a process group, read from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while listed
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, …
            found.add(int(stat.parent.name))
    return found


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _ready(port: int, standin: int) -> dict | None:
    """/healthz once the console answers and a task worker has been heard from, and the
    stand-in answers too; None before."""
    try:
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
        models = httpx.get(
            f"http://127.0.0.1:{standin}/v1/models",
            headers={"Authorization": "Bearer stand-in-key"},
            timeout=5,
        )
    except (httpx.HTTPError, ValueError):
        return None
    return health if health.get("worker") != "none" and models.status_code == 200 else None


def _refused(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _kill_what_is_left(pgid: int) -> None:
    for pid in _group(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


#: -o: the venv is the suite's own, not synced again from the lock
MAKE_RUN = ("make", "--no-print-directory", "-o", ".venv/.synced", "run")
#: whom the TERM goes to → make's exit status: a TERM to make passes it on to its recipe (GNU
#: make does), waits for it and ends by the signal; a TERM to the script ends it, and make, at 0
TARGETS = {"make": -signal.SIGTERM, "script": 0}


def _start_and_term(target: str, port: int, standin: int, env: dict, log: Path) -> None:
    with log.open("wb") as out:
        make = subprocess.Popen(
            [*MAKE_RUN, f"PORT={port}", f"STANDIN_PORT={standin}"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as a terminal gives it
        )
    try:
        health = wait_for(lambda: _ready(port, standin), START_SECONDS, "make run to serve")
        assert health["status"] == "ok"
        # make, console/run, the stand-in, two workers, runserver and its reloader child
        assert len(_group(make.pid)) >= 7
        (script,) = _children(make.pid)
        os.kill({"make": make.pid, "script": script}[target], signal.SIGTERM)
        assert make.wait(60) == TARGETS[target]
        wait_for(lambda: not _group(make.pid), 60, f"every process to end on a TERM to {target}")
    finally:
        _kill_what_is_left(make.pid)
    assert _refused(port) and _refused(standin)


@pytest.mark.slow
def test_a_term_to_make_or_to_its_script_stops_everything_make_run_started(tmp_path):
    port, standin = _free_port(), _free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'run.sqlite3'}",
    }
    # the first start migrates and loads the demo; the second finds both done
    _start_and_term("make", port, standin, env, tmp_path / "make.log")
    _start_and_term("script", port, standin, env, tmp_path / "script.log")
    compare = f"http://127.0.0.1:{port}/sets/support-routing/compare/?col=run:"
    first = (tmp_path / "make.log").read_text()
    assert f"created side by side (custom, typesafe, llm): {compare}" in first
    assert "the demo is loaded already" in (tmp_path / "script.log").read_text()
