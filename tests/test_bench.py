"""The benchmarks run from a plain shell: no DJANGO_DEBUG, no secret key, nothing set. Each
starts Django through bench/_console.py, which gives it a throwaway key and plain HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted(p for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", BENCHES, ids=lambda p: p.name)
def test_every_bench_starts_django_through_the_shared_bootstrap(script):
    text = script.read_text()
    assert "start_django()" in text or "bench_world(" in text, script.name
    assert 'DJANGO_DEBUG="1"' not in text  # a bench measures the console as it is served


@pytest.mark.slow
def test_the_bench_bootstrap_serves_pages_from_a_plain_shell(tmp_path):
    code = f"""
import sys
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "bench")!r}]
from _console import bench_environment, start_django
bench_environment("sqlite:///{tmp_path}/bench.sqlite3")
start_django()
from django.core.management import call_command
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
client = Client()
client.force_login(get_user_model().objects.create_user("bench"))
print(client.get("/accounts/login/").status_code, client.get("/").status_code)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["200", "200"], proc.stderr[-2000:]
