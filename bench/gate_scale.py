"""The CI gate at scale: `questions gate` over N labelled states, replayed (the default backend,
`recorded`: no network).

The states are recorded first by a live run through the project's stand-in (in this process, on
loopback), the version approved on that run, and then the gate — batch run, replay, measuring,
judging, JUnit — is timed R times with every bound given. Printed: the median wall time of a
gate, states per second, and SQL statements per state. SQLite by default (a file in a temporary
directory); PostgreSQL when DATABASE_URL names it (the bench migrates it and adds a set of its
own).

Run:  .venv/bin/python bench/gate_scale.py [--states 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)

QUESTIONS = {
    "route": {
        "type": "choice",
        "instructions": "Which team should take this ticket?",
        "criteria": {f"team_{i}": f"the team for kind {i} of work" for i in range(12)},
    },
    "severity": {
        "type": "score",
        "instructions": "How severe is it?",
        "criteria": ["none", "minor", "moderate", "major", "critical"],
    },
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--states", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="gate-bench-")
    if not os.environ.get("DATABASE_URL"):
        bench_environment(f"sqlite:///{folder}/bench.sqlite3")
    start_django()

    from django.conf import settings
    from django.db import connection

    from questions import roles, services
    from questions.core import gate
    from questions.dev import standin
    from questions.models import Version
    from questions.services import gates
    from tests import factories

    migrate()
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    tag = uuid.uuid4().hex[:8]
    writer, checker = factories.author(f"w-{tag}"), factories.reviewer(f"r-{tag}")
    qs = factories.question_set(f"gate-{tag}", owner=writer, doc=QUESTIONS)
    services.sample_states_import(
        question_set=qs,
        items=[
            {
                "name": f"s{i:05}",
                "state": {"ticket": i, "body": f"team {i % 12} kind of work, urgent {i % 2}"},
                "expected": {"route": f"team_{i % 12}", "severity": i % 5, "urgent": i % 2 == 0},
            }
            for i in range(args.states)
        ],
        author=writer,
    )
    version = services.version_submit(version=factories.draft(qs), author=writer)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=16, enqueue=False
    )
    services.batch_execute(run.pk)
    services.version_approve(version=version, reviewer=checker, label="production")
    server.shutdown()
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "", "http://127.0.0.1:9"
    version = Version.objects.get(pk=version.pk)
    bounds = gate.Bounds(min_pass_rate=0, max_ece=1, max_flip_rate=1, max_cost_per_1k=1)

    spans, statements = [], []
    for _ in range(args.rounds):
        count = [0]

        def counted(execute, sql, params, many, context, count=count):
            count[0] += 1
            return execute(sql, params, many, context)

        started = time.perf_counter()
        with connection.execute_wrapper(counted):
            _, result = gates.gate_run(
                version=version, backend="recorded", user=roles.OPERATOR, bounds=bounds
            )
            gate.junit_xml(result, suite="bench", classname="bench")
        spans.append(time.perf_counter() - started)
        statements.append(count[0])
        assert result.measured.states == args.states and not result.measured.unanswered
    span = statistics.median(spans)
    print(
        f"database: {connection.vendor}; {args.states} labelled states, {len(QUESTIONS)} questions"
    )
    print(
        f"gate (recorded): median {span:.2f} s over {args.rounds} rounds "
        f"({args.states / span:.0f} states/s), "
        f"{statistics.median(statements) / args.states:.2f} SQL statements per state"
    )


if __name__ == "__main__":
    main()
