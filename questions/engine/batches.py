"""The batch engine: concurrency and retries, nothing else. It knows no model and no service:
`questions.services.batches` hands it the items and what to do with each.

`run_pipeline` works through claimed items with provider calls on the process's asyncio loop (a
thread of its own, kept from run to run; at most `concurrency` calls at a time) while the
calling thread — the only one that touches the database — claims items in chunks, writes
outcomes in small batches as they come back, and ticks (heartbeat, cancel). `retryable`,
`backoff` and `retry_delay` say what a provider's refusal is worth another try and how long to
wait; `beating` keeps a heartbeat going in a thread while other work runs (the worker's sweep);
`stopping` is set when the process was asked to stop (SIGTERM): no new call starts, calls in
flight finish; `fewer_collections` sets a worker's garbage collector for runs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import inspect
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

RETRY_AFTER_LIMIT = 60.0  # a provider asking for longer than this is not waited for
HEARTBEAT_SECONDS = 2.0
TICK_SECONDS = 0.5  # how often a run looks for a cancel request
WRITE_BATCH = 64  # outcomes written in one transaction, at most
WRITE_LINGER = 1.0  # how long an outcome waits for others to be written with it, at most
# (a bigger batch holds the GIL for longer while the calls wait for it: at K = 128, batches of up
# to 200 made the span a quarter longer (3.1 s against 2.5 s at 1,000 states) than batches of up
# to 64. Below that rate the linger and the tick decide what a run's database work costs a
# state: at K = 8 (40 states a second at 200 ms) a write cost ~1 ms and a tick ~0.6 ms of CPU
# beside 0.19 ms a state written; a write a second rather than two, and a look for a cancel two
# times a second rather than four, leave the page's progress, which polls every second, as it was)
#: items claimed ahead of the calls, at least (twice the concurrency above 64), in chunks of half:
#: a claim cost ~3.3 ms of CPU and 0.05 ms a state (one transaction, two queries the ORM builds
#: anew), so at K = 8 chunks of 32 cost 0.15 ms a state, a third of the database thread's work;
#: chunks of 64, 0.09
CLAIM_AHEAD = 128

#: the calls one worker process makes at a time for one run, at most, where several processes
#: can work a run side by side (PostgreSQL): a wider run is enqueued as tasks of up to this many
#: calls each, which as many `db_worker`s take (`services.batches.task_widths`). A process's
#: calls, answer checks and writes share one interpreter lock: at 64 calls in flight one process
#: keeps up on one core; at 128 it was bound by its CPU (docs/benchmarks.md)
WORKER_CALLS = 64

#: new objects between two collections of the youngest generation in a worker (Python's own:
#: 700; `fewer_collections`)
YOUNG_COLLECTION = 10_000

#: set when the process was asked to stop: runs release what they have not sent
stopping = threading.Event()


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The garbage collector of a process that executes runs (`manage.py db_worker`), for as
    long as the block lasts: what it loaded before (Django, the app, ~95,000 objects) is
    frozen out of every collection (`gc.freeze`), and the youngest generation is collected
    every YOUNG_COLLECTION new objects rather than 700. A run keeps some 90 objects a state
    alive until they are written, so by default a young collection ran every 8 states and a
    full one, over all that was loaded, every 1,000 or so: 6 to 8 % of a run's span at
    K = 128 (1.2–1.4 s of 20 at 10,000 states)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_COLLECTION), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def retryable(outcome) -> bool:
    """Worth another try: a rate limit (429), the provider's 5xx and 529, and a live call that
    got no answer at all: the provider could not be reached (502) or did not answer in time
    (504). A refusal of what was asked, an answer in an unexpected shape or a provider that
    rejected the key is not."""
    error = outcome.error
    if error is None:
        return False
    if error.status == 429 or (error.provider_status_code or 0) >= 500:
        return True
    went_out = outcome.live and outcome.request_body is not None
    return went_out and error.provider_status_code is None and error.status in (502, 504)


def backoff(attempt: int, retry_after: float | None) -> float:
    """Capped exponential backoff, or what the provider asked for (Retry-After)."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_LIMIT)
    base = settings.DECISIONS_BATCH_BACKOFF_SECONDS
    return min(settings.DECISIONS_BATCH_BACKOFF_CAP_SECONDS, base * 2 ** (attempt - 1))


def retry_delay(outcome, attempt: int, max_attempts: int, stopped: bool) -> float | None:
    """How long to wait before asking again after `attempt` calls ended in `outcome`, or None
    when this outcome is the last: an answer, an error not worth retrying, the attempts spent,
    or the run stopped."""
    if not retryable(outcome) or stopped:
        return None
    if attempt >= min(max_attempts, outcome.error.attempts or max_attempts):
        return None  # the attempts spent: the run's, or fewer for this error (the table's)
    return backoff(attempt, outcome.error.retry_after)


@contextlib.contextmanager
def beating(beat: Callable[[], None], every: float = HEARTBEAT_SECONDS) -> Iterator[None]:
    """Call `beat` every `every` seconds in a thread of its own while the block runs."""
    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(every):
                beat()
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


@dataclass
class Done:
    """What became of one claimed item: every outcome of a call that went out (`tried`, in
    order; the last is the item's), or the exception nobody mapped, or `released` when it was
    never asked because the run stopped first."""

    item: Any
    tried: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    released: bool = False
    back: float = 0.0  # when it came back (time.monotonic())

    @property
    def outcome(self) -> Any:
        return self.tried[-1] if self.tried else None

    @property
    def attempts(self) -> int:
        return max(1, len(self.tried))


def run_pipeline(
    *,
    claim: Callable[[int], list[Any]],
    ask: Callable[..., Any],
    write: Callable[[list[Done]], None],
    tick: Callable[[], bool],
    concurrency: int,
    max_attempts: int,
    session: Callable[[], contextlib.AbstractAsyncContextManager[list]] | None = None,
    sleep: Callable[[float], Any] | None = None,
) -> bool:
    """Ask about every item `claim(n)` hands out until it hands out none or the run stops;
    whether it stopped early (`tick()` said so — a cancel — or `stopping` was set).

    `ask` is a coroutine function `ask(item, slot)` run on the process's asyncio loop (a thread
    of its own, kept from run to run), at most `concurrency` at a time: `session()` opens there
    (once a run) an async context that yields `concurrency` slots — e.g. HTTP clients of one
    connection each — and each call gets a free one. Or `ask` is a plain function `ask(item)`
    run here, one at a time (a replay asks the database).
    Outcomes the engine retries (`retry_delay`) are asked again after the backoff. Everything
    else — `claim`, `write(done)` with up to WRITE_BATCH results, `tick()` every TICK_SECONDS —
    runs in the calling thread, which holds the only database connection. An exception raised
    by `ask` is handed to `write` as that item's (`Done.error`); one raised by `claim`, `write`
    or `tick` stops the run and is raised here once the calls in flight have ended and what
    came back has been written, if it still can be."""
    concurrency = max(1, concurrency)
    halt = threading.Event()  # read by the calls: nothing new is sent
    results = _Results()
    asynchronous = inspect.iscoroutinefunction(ask)
    pipeline = _Calls(concurrency, session) if asynchronous else None

    def attempts_sync(item: Any) -> Done:
        done = Done(item)
        try:
            while True:
                done.tried.append(ask(item))
                delay = retry_delay(done.outcome, len(done.tried), max_attempts, halt.is_set())
                if delay is None:
                    return done
                (sleep or time.sleep)(delay)
        except Exception as exc:
            done.error = exc
            return done

    async def pause(delay: float) -> None:
        """A backoff that ends early when the run stops (a Retry-After may ask for a minute)."""
        until = time.monotonic() + delay
        while not halt.is_set() and (left := until - time.monotonic()) > 0:
            await asyncio.sleep(min(left, TICK_SECONDS))

    async def attempts_async(item: Any, free: asyncio.Queue) -> None:
        done = Done(item)
        slot = await free.get()  # one of `concurrency` slots: at most that many calls at once
        try:
            if halt.is_set() or stopping.is_set():  # a stop is not waited for to the next tick
                done.released = True
                return
            while True:
                done.tried.append(await ask(item, slot))
                delay = retry_delay(done.outcome, len(done.tried), max_attempts, halt.is_set())
                if delay is None:
                    return
                waited = (sleep or pause)(delay)
                if inspect.isawaitable(waited):
                    await waited
                if halt.is_set():  # stopped while it waited: its last outcome stands
                    return
        except Exception as exc:
            done.error = exc
        finally:
            free.put_nowait(slot)
            results.put(done)

    outstanding = 0  # claimed and not yet come back
    done: list[Done] = []  # come back and not yet written
    written_by = math.inf  # when the oldest of them is written at the latest
    ahead = max(2 * concurrency, CLAIM_AHEAD)
    exhausted = stopped = False
    next_tick = 0.0
    try:
        if pipeline:
            pipeline.start()
        while True:
            if time.monotonic() >= next_tick:
                stopped = tick() or stopped
                next_tick = time.monotonic() + TICK_SECONDS
            # the process's stop is seen at once, as each call sees it (it is then released)
            stopped = stopped or stopping.is_set()
            if stopped:
                halt.set()
            # claim ahead so the calls never wait for one, in chunks of at least half of what
            # is claimed ahead, so that a claim is not a transaction per state
            chunk = max(1, ahead // 2)
            room = ahead - outstanding
            if not (stopped or exhausted) and room >= chunk:
                items = claim(room)
                exhausted = len(items) < room
                outstanding += len(items)
                if pipeline:
                    pipeline.submit(attempts_async, items)
                else:
                    for item in items:
                        results.put(attempts_sync(item))
            finishing = outstanding == 0 and (stopped or exhausted)
            # the outcomes are written in batches (a transaction per state costs more than the
            # state's own work): when WRITE_BATCH have come back, when the oldest has waited
            # WRITE_LINGER seconds, and at the end
            if done and (len(done) >= WRITE_BATCH or time.monotonic() >= written_by or finishing):
                write(done)
                done, written_by = [], math.inf
            if finishing:
                return stopped
            # woken when what it waits for has come back: room for the next claim, a full
            # write, the last outcome; else at the next tick or when the oldest must be written
            wanted = [WRITE_BATCH - len(done), outstanding]
            if not (stopped or exhausted):
                wanted.append(chunk - (ahead - outstanding))
            wait = max(0.0, min(TICK_SECONDS, min(next_tick, written_by) - time.monotonic()))
            batch = results.take(wait, min(wanted), WRITE_BATCH - len(done))
            if batch:
                outstanding -= len(batch)
                if not done:
                    written_by = batch[0].back + WRITE_LINGER
                done += batch
    except BaseException:
        halt.set()
        if pipeline:
            pipeline.close()  # the calls in flight end and come back
        # what came back is written if it still can be (its calls went out: a run taken over
        # would ask them again)
        leftover = done + results.take(0, 0, math.inf)
        if leftover:
            with contextlib.suppress(Exception):
                write(leftover)
        raise
    finally:
        if pipeline:
            pipeline.close()


class _Results:
    """What came back, handed from the calls to the thread that writes. That thread is woken
    when what it waits for has come back (`take`'s `wake_at`: room for the next claim, a full
    write, the run's last outcome), not by each outcome: a wake-up per call cost both threads a
    hand-over of the GIL for every state."""

    def __init__(self) -> None:
        self.items: collections.deque[Done] = collections.deque()
        self.ready = threading.Event()
        self.wake_at = 1

    def put(self, done: Done) -> None:
        done.back = time.monotonic()
        self.items.append(done)
        if len(self.items) >= self.wake_at and not self.ready.is_set():
            self.ready.set()

    def take(self, wait: float, wake_at: int, most: float) -> list[Done]:
        """Up to `most` of what came back, once `wake_at` have (at least one) or after `wait`
        seconds, whichever is first."""
        self.wake_at = max(1, wake_at)
        self.ready.clear()  # before the count is read: an outcome put after it sets it again
        if len(self.items) < self.wake_at and wait > 0:
            self.ready.wait(wait)
        batch: list[Done] = []
        while self.items and len(batch) < most:
            batch.append(self.items.popleft())
        return batch


class _Loop:
    """The process's asyncio loop for provider calls, in a thread of its own that lives as long
    as the process: what a run opens on it (its session's HTTP clients, with their open
    connections) can be kept for the next run (`questions.services.batches`)."""

    _lock = threading.Lock()
    _current: _Loop | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="batch-calls", daemon=True
        )
        self.thread.start()

    @classmethod
    def shared(cls) -> _Loop:
        """This process's loop, started at its first use (again in a forked child, or if its
        thread ever ended)."""
        with cls._lock:
            current = cls._current
            if current is None or current.pid != os.getpid() or not current.thread.is_alive():
                cls._current = cls()
            return cls._current

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


class _Calls:
    """One run's calls on the process's loop, and its `concurrency` slots: the session's objects
    (one each, e.g. an HTTP client with one connection), or None each without a session. The
    session is opened on the loop at start and closed there at the end, once the run's calls
    have ended."""

    def __init__(self, concurrency: int, session: Callable | None):
        self.shared = _Loop.shared()
        self.concurrency = concurrency
        self.opened = session() if session else contextlib.nullcontext([None] * concurrency)
        self.tasks: set[asyncio.Task] = set()  # on the loop only
        self.started = False

    def start(self) -> None:
        async def open_slots() -> asyncio.Queue:
            free: asyncio.Queue = asyncio.Queue()
            for slot in await self.opened.__aenter__():
                free.put_nowait(slot)
            return free

        self.free = self.shared.run(open_slots())
        self.started = True

    def submit(self, attempts: Callable[..., Awaitable[None]], items: list[Any]) -> None:
        """A task on the loop for each item, all handed over at once (one wake-up of the loop
        for a claim, not one per item)."""
        if items:
            self.shared.loop.call_soon_threadsafe(self._start, attempts, items)

    def _start(self, attempts: Callable[..., Awaitable[None]], items: list[Any]) -> None:
        for item in items:
            task = self.shared.loop.create_task(attempts(item, self.free))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def close(self) -> None:
        """Wait for the calls still in flight (each bounded by its deadline), then close the
        session."""
        if not self.started:
            return
        self.started = False  # closed once

        async def ended() -> None:
            # what was handed over is started first (`_start` runs before this, in order)
            while self.tasks:
                await asyncio.gather(*self.tasks, return_exceptions=True)
            await self.opened.__aexit__(None, None, None)

        self.shared.run(ended())
