"""Controls and drift runs: batch runs of their own kind, asked live through the batch engine
(`questions.services.batches`) like any run — the same wires, recordings, retries and bounded
concurrency. What a control changes in the questions is `questions.controls`'s."""

from __future__ import annotations

from typing import Any

from questions import roles
from questions.core import check, controls, invariance
from questions.engine import backends
from questions.models import BatchRun, Version
from questions.services.batches import (
    DEFAULT_CONCURRENCY,
    DEFAULT_THRESHOLD,
    DRIFT,
    RUNNERS_ONLY,
    batch_create,
)
from questions.services.errors import Conflict, Invalid, model_name, require
from questions.services.versions import limits

MAX_SEED = 2**31 - 1


def control_create(
    *,
    version: Version,
    backend: str,
    user: Any,
    kind: str,
    count: int,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    threshold: float = DEFAULT_THRESHOLD,
    model: str | None = None,
    enqueue: bool = True,
) -> BatchRun:
    """A control run of `version`: every sample state asked once per variant (the questions as
    written, then `count` shuffles or orders; or `count` calls in all for repeatability)."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    if kind not in controls.KINDS:
        raise Invalid(f"Unknown control {kind!r}; one of {', '.join(controls.KINDS)}.")
    least = 2 if kind == controls.REPEAT else 1
    if not least <= count <= controls.MAX_VARIANTS:
        raise Invalid(
            f"A {controls.TITLES[kind]} takes {least} to {controls.MAX_VARIANTS} "
            f"{ {controls.SHUFFLE: 'shuffles', controls.ORDERS: 'orders'}.get(kind, 'calls') }, "
            f"not {count}."
        )
    if not 0 <= seed <= MAX_SEED:
        raise Invalid(f"The seed is a whole number from 0 to {MAX_SEED}, not {seed}.")
    _live_only(backend, "A control asks live")
    return batch_create(
        version=version,
        backend=backend,
        user=user,
        concurrency=concurrency,
        threshold=threshold,
        model=model,
        enqueue=enqueue,
        variants=controls.variants(kind, count),
        kind=kind,
        control_count=count,
        control_seed=seed,
    )


def invariance_create(
    *,
    version: Version,
    backend: str,
    user: Any,
    concurrency: int = DEFAULT_CONCURRENCY,
    model: str | None = None,
    enqueue: bool = True,
) -> BatchRun:
    """An invariance and coherence control of `version` (`questions.invariance`): every sample
    state asked as written, with its ids renamed, its questions reordered, its nouls negated,
    its choices' first option cloned and each question alone."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    parsed = check.validate(version.document, limits=limits(), lints=False).document
    if parsed is None:
        raise Invalid(f"Version {version.number} is invalid: fix it before a control asks it.")
    _live_only(backend, "A control asks live")
    calls = len(invariance.variants(parsed.questions))
    return batch_create(
        version=version,
        backend=backend,
        user=user,
        concurrency=concurrency,
        model=model,
        enqueue=enqueue,
        variants=calls,
        kind=invariance.KIND,
        control_count=calls - 1,
    )


def _live_only(backend: str, what: str) -> None:
    """Refuse a replay: it answers only what was asked before, not a shuffle or a new model."""
    try:
        live = backends.get(backend).live
    except backends.DecisionError as exc:
        raise Invalid(exc.detail, code="unknown_backend") from None
    if not live:
        raise Invalid(f"{what}: {backend} replays recordings; choose a live backend.")


def drift_baseline(version: Version, model: str, backend: str | None = None) -> BatchRun | None:
    """The last finished plain run of `version` on another model than `model` (through
    `backend`, when given): what a drift run is set against."""
    runs = version.batch_runs.filter(kind="run", status=BatchRun.Status.DONE).exclude(model=model)
    if backend:
        runs = runs.filter(backend=backend)
    return runs.order_by("-finished_at", "-id").first()


def drift_create(
    *,
    version: Version,
    model: str,
    user: Any,
    backend: str | None = None,
    concurrency: int | None = None,
    enqueue: bool = True,
) -> BatchRun:
    """A drift run: the approved `version` re-asked about its states on `model`, set against
    the last run on the approved model (`drift_baseline`), through the same backend, threshold
    and concurrency unless told otherwise."""
    require(user, roles.may_ask_live, RUNNERS_ONLY, on=version.question_set)
    if version.status != Version.Status.APPROVED:
        raise Invalid(f"Version {version.number} is not approved: drift compares production.")
    model = model_name(model)
    baseline = drift_baseline(version, model, backend)
    if baseline is None:
        through = f" through {backend}" if backend else ""
        raise Conflict(
            f"{version.question_set.slug} v{version.number} has no finished run{through} on "
            f"a model other than {model}: run it on the approved model first."
        )
    _live_only(baseline.backend, "A drift run asks live")
    return batch_create(
        version=version,
        backend=baseline.backend,
        user=user,
        concurrency=concurrency or baseline.concurrency,
        threshold=baseline.threshold,
        model=model,
        enqueue=enqueue,
        kind=DRIFT,
        baseline=baseline,
    )
