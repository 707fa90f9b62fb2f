"""Helper processes: Django processes this one spawns once and keeps (`pool`), which run a
function with this process's settings and database (`Pool.submit`). The batch engine spreads a
wide run's calls over them (`services.batches`): one process's calls, answer checks and
recordings share its GIL, and at concurrency 64 and more they needed more than one core.

A helper starts as a fresh interpreter (spawned, never forked: this process has threads, an
event loop and open connections, none of which a child may share), runs `django.setup()` with
this process's settings module, and then, for each function it is handed, takes this process's
settings and database first (a test's overrides and its test database included). It ignores
Ctrl-C (the terminal's signal goes to the whole group: this process decides); SIGTERM sets its
own `batches.stopping`. `stopping()` tells a helper's work to stop: this process set
`Pool.stop` (its run stopped, or it is stopping itself) or is gone; a helper whose parent is
gone ends once its work in hand has stopped, or within ORPHAN_CHECK_SECONDS when it has none.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connections

ORPHAN_CHECK_SECONDS = 1.0  # how often an idle helper looks whether its parent is gone

_lock = threading.Lock()
_working = threading.Lock()  # held by a helper while it runs a function
_pool: Pool | None = None

# in a helper: what its parent tells it
_stop: Any = None  # the parent's `Pool.stop`
_parent: int | None = None  # the parent's pid


class Pool:
    """`size` helper processes of this process, spawned as they are first needed."""

    def __init__(self, size: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.size, self.pid = size, os.getpid()
        self.stop = context.Event()
        self.executor = ProcessPoolExecutor(
            size,
            mp_context=context,
            initializer=_start,
            initargs=(self.stop, settings.SETTINGS_MODULE, os.getpid()),
        )

    def submit(self, fn, *args: Any) -> Future:
        """`fn(*args)` in a helper, with this process's settings and database; its result (or
        its exception) comes back pickled."""
        return self.executor.submit(_call, _settings(), fn, *args)

    @property
    def broken(self) -> bool:
        return bool(getattr(self.executor, "_broken", False))

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


def pool(size: int) -> Pool:
    """This process's pool of `size` helpers: the one it has, or a new one when it has none of
    that size, or its helpers died (the pool is broken), or this is a forked child."""
    global _pool
    with _lock:
        kept = _pool
        if kept is None or kept.pid != os.getpid() or kept.broken or kept.size != size:
            if kept is not None and kept.pid == os.getpid():
                kept.shutdown()
            _pool = Pool(size)
        return _pool


def helper_pids() -> list[int]:
    """The process ids of this process's helpers, started so far (e.g. to measure them)."""
    kept = _pool
    if kept is None or kept.pid != os.getpid():
        return []
    return list(getattr(kept.executor, "_processes", None) or {})


def stopping() -> bool:
    """In a helper: whether its parent asked it to stop (`Pool.stop`) or is gone."""
    return (_stop is not None and _stop.is_set()) or _gone()


def _settings() -> dict[str, Any]:
    """This process's settings, those that can be handed to another process, and the
    databases its connections use (a test run's test database)."""
    values = {}
    for name in dir(settings):
        if name.isupper() and name != "DATABASES":
            value = getattr(settings, name)
            try:
                pickle.dumps(value)
            except Exception:  # e.g. a callable defined in a test: the helper keeps its own
                continue
            values[name] = value
    values["DATABASES"] = {alias: dict(connections[alias].settings_dict) for alias in connections}
    return values


def _start(stop: Any, module: str, parent: int) -> None:
    """A helper's start: Django set up as its parent's, its signals, a worker's collector."""
    global _stop, _parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", module)
    import django

    django.setup()
    from questions.engine import batches

    signal.signal(signal.SIGTERM, lambda signum, frame: batches.stopping.set())
    _stop, _parent = stop, parent
    batches.collect_fewer()
    threading.Thread(target=_orphaned, daemon=True).start()


def _orphaned() -> None:
    """In a helper: end the process once its parent is gone and it has no work in hand (work
    in hand sees `stopping()`, ends, and the process ends after it, `_call`). An idle helper
    would otherwise wait for work forever."""
    while not _gone():
        time.sleep(ORPHAN_CHECK_SECONDS)
    with _working:
        os._exit(0)


def _gone() -> bool:
    return _parent is not None and os.getppid() != _parent


def _call(values: dict[str, Any], fn, *args: Any) -> Any:
    """In a helper: `fn(*args)` with its parent's settings and databases."""
    for alias, conf in values.pop("DATABASES").items():
        wrapper = connections[alias]
        if wrapper.settings_dict != conf:
            wrapper.close()
            wrapper.settings_dict.clear()
            wrapper.settings_dict.update(conf)
    for name, value in values.items():
        setattr(settings, name, value)
    with _working:
        try:
            return fn(*args)
        finally:
            connections.close_all()
            if _gone():  # nobody reads what it did: end here
                os._exit(0)
