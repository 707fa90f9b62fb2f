"""Demo users and question sets for `questions demo` (and `make run` on its first start): the
builder; the sets themselves are data in `demo_sets` (and `demo_refunds`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test.utils import override_settings
from django.urls import reverse

from questions import roles, services
from questions.dev import demo_production, standin
from questions.dev.demo_sets import SETS, SIDE_BY_SIDE, SUGGESTED
from questions.models import Label, QuestionSet
from questions.services import suggestions

PASSWORD = "demo"
#: what `make run` sets DECISIONS__CUSTOM_BACKEND to, and what the demo's own runs use
DEMO_RULES = "questions.dev.demo_rules:answer"


def demo_load() -> list[str]:
    """Create what is missing; what exists is left as it is. Returns what was done.

    A newcomer sees every screen with something on it: `gestures` has v1 and v2 approved, a
    finished run of each, and `production` moved from v1 to v2; `support-routing` waits for
    review; `shell-guard` is a draft. The runs are asked of a stand-in started for the purpose,
    never of a configured provider, so loading the demo costs nothing."""
    server = standin.serve_in_thread()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with override_settings(
            TYPESAFE_API_KEY=standin.KEY,
            TYPESAFE_BASE_URL=base,
            LLM_API_KEY=standin.KEY,
            LLM_BASE_URL=f"{base}/v1",
            DECISIONS_CUSTOM_BACKEND=DEMO_RULES,
        ):
            done, runs, side_by_side = _load_sets()
            finished = [services.batch_execute(run.pk) for run in [*runs, *side_by_side]]
            done += _suggest([run.question_set.slug for run in runs])
    finally:
        server.shutdown()
        server.server_close()
    done += [f"run {run.pk} of {run.version} ({run.status})" for run in finished if run]
    done += _approve(runs)
    if side_by_side:
        columns = "&".join(f"col=run:{run.pk}" for run in side_by_side)
        # the whole address, as one clicks it in a terminal (CONSOLE_PUBLIC_URL: make run's)
        compare = reverse("set-compare", args=[side_by_side[0].question_set.slug])
        link = f"{settings.CONSOLE_PUBLIC_URL}{compare}?{columns}"
        done.append(f"side by side ({', '.join(SIDE_BY_SIDE)}): {link}")
    done += _promote(runs)
    return done + demo_production.load(get_user_model().objects.get(username="author"))


@transaction.atomic
def _load_sets() -> tuple[list[str], list[Any], list[Any]]:
    """What was done, the runs of the versions to approve (in review; approved on them once
    they have finished, `_approve`), and the side-by-side runs of a set's newest version
    through `side_by_side`'s backends."""
    done = []
    side_by_side = []
    user_model = get_user_model()
    users = {}
    team = services.team_default()
    for username, role in (("author", roles.AUTHOR), ("reviewer", roles.REVIEWER)):
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model.objects.create_user(username, password=PASSWORD)
            done.append(f"user {username} (password {PASSWORD})")
        if roles.role_in(user, team) is None:
            services.member_set(team=team, username=username, role=role, user=roles.OPERATOR)
            roles.forget(user)
        users[username] = user
    runs = []
    for spec_ in SETS:
        if QuestionSet.objects.filter(slug=spec_["slug"]).exists():
            continue
        question_set = services.question_set_create(
            slug=spec_["slug"],
            name=spec_["name"],
            description=spec_["description"],
            owner=users["author"],
        )
        previous = None
        for document, step in zip(spec_["versions"], spec_["steps"], strict=True):
            version = services.version_create(
                question_set=question_set,
                document=document,
                author=users["author"],
                parent=previous,
                note="demo",
            )
            if previous is None:  # the import checks the expected answers against v1
                services.sample_states_import(
                    question_set=question_set, items=spec_["states"], author=users["author"]
                )
            if step in ("review", "approve"):
                version = services.version_submit(version=version, author=users["author"])
            if step == "approve":  # approved once its run has finished (`_approve`)
                runs.append(
                    services.batch_create(
                        version=version, backend="typesafe", user=users["author"], enqueue=False
                    )
                )
            previous = version
        for backend in spec_.get("side_by_side", ()):
            side_by_side.append(
                services.batch_create(
                    version=previous, backend=backend, user=users["author"], enqueue=False
                )
            )
        done.append(
            f"set {question_set.slug} ({len(spec_['versions'])} version(s), "
            f"{len(spec_['states'])} sample states)"
        )
    return done, runs, side_by_side


def _suggest(loaded: list[str]) -> list[str]:
    """Suggest rewordings of the demo's `SUGGESTED` question, drafted and proven by the
    stand-in, when its set was loaded now: its editor card shows the candidates at once."""
    slug, question = SUGGESTED
    if slug not in loaded:
        return []
    version = QuestionSet.objects.get(slug=slug).versions.get(number=1)
    plan = suggestions.suggestion_plan(version=version, question=question, user=roles.OPERATOR)
    made = suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False)
    found = suggestions.suggestion_execute(made.pk)
    verdicts = ", ".join(
        f"{c['number']} {c.get('verdict') or c['status']}" for c in found.candidates
    )
    return [f"suggestion {found.pk} for {slug} v1 {question} ({found.status}): {verdicts}"]


def _approve(runs: list[Any]) -> list[str]:
    """Approve each run's version, oldest first, on the run it has just finished — so the
    approval records its evidence run and the model that answered it, as a reviewer's does:
    a set's first version under `production`, a later one under `staging`."""
    done = []
    reviewer = get_user_model().objects.get(username="reviewer")
    for run in sorted(runs, key=lambda r: r.pk):
        version = run.version
        first = not version.question_set.labels.filter(name=Label.BASELINE).exists()
        label = Label.BASELINE if first else "staging"
        version = services.version_approve(
            confirm_weak_evidence=True,
            version=version,
            reviewer=reviewer,
            note="demo",
            label=label,
        )
        done.append(
            f"approved {version.question_set.slug} v{version.number} on run "
            f"{version.approved_evidence_run_id} ({label})"
        )
    return done


def _promote(runs: list[Any]) -> list[str]:
    """Move `production` to the newest approved version of each set the demo ran."""
    done = []
    reviewer = get_user_model().objects.get(username="reviewer")
    for question_set in {run.question_set for run in runs}:
        newest = question_set.versions.filter(status="approved").order_by("-number").first()
        label = question_set.labels.get(name=Label.BASELINE)
        if label.version != newest:
            before = label.version.number
            services.label_move(
                question_set=question_set,
                name=Label.BASELINE,
                version=newest,
                actor=reviewer,
                note="demo: v2 describes every option",
            )
            done.append(
                f"label move: production of {question_set.slug} v{before} → v{newest.number}"
            )
    return done
