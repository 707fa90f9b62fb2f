"""The batch engine: concurrency and retries, nothing else. It knows no model and no service:
`questions.services.batches` hands it the items and what to do with each.

`run_concurrently` works through item ids with a bounded number of threads (each with its own
database connection for its life); `retryable` and `backoff` say what a provider's refusal is
worth another try and how long to wait; `beating` keeps a heartbeat going while work runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from django.conf import settings
from django.db import close_old_connections, connection

RETRY_AFTER_LIMIT = 60.0  # a provider asking for longer than this is not waited for
HEARTBEAT_SECONDS = 2.0


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


def run_concurrently(
    item_ids: Iterable[int],
    work: Callable[[int], None],
    *,
    concurrency: int,
    stopped: Callable[[], bool],
) -> None:
    """Call `work(item_id)` for every item, at most `concurrency` at a time, until none is left
    or `stopped()` says so. An exception in `work` stops every thread and is raised here (the
    batch service fails the one item instead, so only a failure to record that gets through)."""
    pending = deque(item_ids)
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            while True:
                with lock:
                    if not pending or failures:
                        return
                    item_id = pending.popleft()
                if stopped():
                    return
                work(item_id)
        except BaseException as exc:  # surfaced below, after every worker stopped
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(max(1, concurrency))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        close_old_connections()
    if failures:
        raise failures[0]
