"""Try across states: only the changed questions go to the provider (counted at a loopback
provider); the others are replayed from recordings; the answers before → after, the pass rate
and the flips; the plan's calls and cost; the editor's endpoints."""

from __future__ import annotations

import pytest

from questions import services
from questions.dev import standin
from questions.models import BatchRun
from questions.services import tries
from tests import factories
from tests.providers import DOC, KEY, Provider

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(provider_factory):
    return provider_factory(
        Provider(default=lambda body: standin.respond(body)[1]),
        key=KEY,
        DECISIONS_BATCH_BACKOFF_SECONDS=0.01,
    )


def a_set(n: int = 4):
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(n):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i}",
            state={"n": i},
            author=writer,
            expected={"desk": "billing", "urgent": i % 2 == 0},
        )
    return services.open_draft(qs), writer


def edited(version, writer, words: str):
    document = version.document
    document["desk"]["instructions"] = words
    return services.version_save(
        version=version, document=document, base_revision=version.revision, author=writer
    )


def test_a_try_asks_only_the_changed_question_and_replays_the_rest(provider):
    version, writer = a_set(4)
    first = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    first = services.batch_execute(first.pk)
    assert first.status == "done" and len(provider.requests) == 4
    provider.requests.clear()

    version = edited(version, writer, "Which desk handles it?")
    plan = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=writer
    )
    assert plan.changed == ["desk"] and plan.unchanged == ["urgent"]
    assert plan.baseline_run == first and plan.live_calls == 4
    run = tries.try_start(version=version, plan=plan, user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    assert len(provider.requests) == 4
    assert all(set(r["body"]["questions"]) == {"desk"} for r in provider.requests)
    # every item holds both answers: the replayed one is the first run's
    before = {i.sample_state.sample_state_id: i.answers for i in first.items.all()}
    for item in run.items.select_related("sample_state"):
        assert set(item.answers) == {"urgent", "desk"}  # (jsonb keeps no key order)
        assert item.answers["urgent"] == before[item.sample_state.sample_state_id]["urgent"]
    result = tries.try_result(run)
    assert result.changed == ["desk"] and len(result.rows) == 4
    assert all(c.before is not None and c.after is not None for r in result.rows for c in r.cells)
    assert result.pass_before is not None and result.pass_after is not None
    flips = [r.flips for r in result.rows]
    assert flips == sorted(flips, reverse=True)  # flips first
    assert run in BatchRun.objects.filter(question_set=version.question_set)


def test_a_second_edit_is_told_apart_from_the_first_try(provider):
    version, writer = a_set(2)
    services.batch_execute(
        services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False).pk
    )
    version = edited(version, writer, "Which desk?!")
    plan = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=writer
    )
    services.batch_execute(
        tries.try_start(version=version, plan=plan, user=writer, enqueue=False).pk
    )
    document = version.document
    document["urgent"]["instructions"] = "Is it urgent now?"
    plan = tries.try_plan(version=version, document=document, backend="typesafe", user=writer)
    assert plan.changed == ["urgent"]  # the try's own record says desk was asked as it is
    unchanged = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=writer
    )
    assert unchanged.changed == [] and unchanged.live_calls == 0
    with pytest.raises(services.Invalid, match="Nothing changed"):
        tries.try_start(version=version, plan=unchanged, user=writer, enqueue=False)


def test_against_a_version_and_without_any_run(provider):
    version, writer = a_set(2)
    plan = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=writer
    )
    assert plan.baseline_run is None and plan.changed == ["urgent", "desk"]
    assert plan.estimated_cost is None  # nothing recorded says what a call costs
    with pytest.raises(services.Invalid, match="no version"):
        tries.try_plan(
            version=version,
            document=version.document,
            backend="typesafe",
            user=writer,
            against="v9",
        )
    with pytest.raises(services.Invalid, match="tagged nope"):
        tries.try_plan(
            version=version,
            document=version.document,
            backend="typesafe",
            user=writer,
            tag="nope",
        )


def test_readers_may_not_try(provider):
    version, _ = a_set(1)
    with pytest.raises(services.NotAllowed):
        tries.try_plan(
            version=version,
            document=version.document,
            backend="typesafe",
            user=factories.user(),
        )


def test_the_preview_marks_the_expected_answer_and_explains_confidence(provider, client):
    version, writer = a_set(1)
    state = version.question_set.sample_states.get()
    client.force_login(writer)
    page = client.post(
        f"/sets/{version.question_set.slug}/v{version.number}/preview/",
        {"preview_state": state.pk, "preview_backend": "typesafe"},
    ).content.decode()
    answered = standin.respond({"state": state.state, "questions": version.document, "model": "m"})[
        1
    ]["answers"]
    desk_ok = answered["desk"]["choice"] == "billing"
    assert f"{'✓' if desk_ok else '✗'} expected billing" in page
    assert "expected true" in page
    assert 'class="hint"' in page and "certainty" in page
    assert standin.MODEL in page and "(asked for" in page


def test_the_editor_says_when_typesafe_is_the_stand_in(provider, client, settings):
    version, writer = a_set(1)
    client.force_login(writer)
    url = f"/sets/{version.question_set.slug}/v{version.number}/"
    settings.DECISIONS_STANDIN = True
    assert "typesafe (local stand-in)" in client.get(url).content.decode()
    settings.DECISIONS_STANDIN = False
    assert "typesafe (local stand-in)" not in client.get(url).content.decode()


def test_the_try_endpoints_plan_save_and_report(provider, client):
    version, writer = a_set(2)
    services.batch_execute(
        services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False).pk
    )
    client.force_login(writer)
    base = f"/sets/{version.question_set.slug}/v{version.number}"
    page = client.get(base + "/").content.decode()
    from tests.helpers import as_post, fields_of

    data = as_post(fields_of(page))
    key = next(k for k in data["q"] if data[f"q-{k}-id"] == ["desk"])
    data[f"q-{key}-instructions"] = ["Which desk, then?"]
    data.update(try_backend=["typesafe"], try_against=[""], base_revision=[str(version.revision)])
    plan = client.post(base + "/try/plan/", data).content.decode()
    assert "2 live calls" in plan and "<code>desk</code>" in plan and "run " in plan
    assert provider.requests[-1]["body"]["questions"].keys() == {"urgent", "desk"}
    asked = len(provider.requests)
    started = client.post(base + "/try/", data).content.decode()
    version.refresh_from_db()
    assert version.document["desk"]["instructions"] == "Which desk, then?"
    assert f'data-saved="{version.revision}"' in started
    run = BatchRun.objects.latest("id")
    assert run.live_questions == ["desk"] and len(provider.requests) == asked
    services.batch_execute(run.pk)
    report = client.get(f"/runs/{run.pk}/try/").content.decode()
    assert "Pass rate" in report and "expected billing" in report and "hx-trigger" not in report
    run.refresh_from_db()
    result = tries.try_result(run)
    assert result.words_after and result.words_after in report  # with its interval and n
    assert ", n = " in result.words_after
    again = client.post(base + "/try/", data).content.decode()
    assert 'id="try-run"' in again and "Nothing changed since run" in again
    data[f"q-{key}-instructions"] = ["Which desk, now?"]
    stale = client.post(base + "/try/", data).content.decode()
    assert "Not tried" in stale  # the page's revision is behind the saved one
    data["try_against_number"] = ["7"]
    assert "has no version" in client.post(base + "/try/plan/", data).content.decode()


def test_a_try_refused_before_or_after_its_save_keeps_the_page_in_step(provider, client):
    version, writer = a_set(1)
    services.batch_execute(
        services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False).pk
    )
    client.force_login(writer)
    base = f"/sets/{version.question_set.slug}/v{version.number}"
    from tests.helpers import as_post, fields_of

    data = as_post(fields_of(client.get(base + "/").content.decode()))
    data.update(try_backend=["typesafe"], base_revision=[str(version.revision)])
    edited(version, writer, "Which desk now?")  # saved elsewhere: the page is one behind
    key = next(k for k in data["q"] if data[f"q-{k}-id"] == ["desk"])
    refused = client.post(base + "/try/", {**data, "try_tag": "nope"}).content.decode()
    assert "tagged nope" in refused and "data-saved" not in refused  # refused before saving
    version.refresh_from_db()
    assert version.document["desk"]["instructions"] == "Which desk now?"
    # the page's own text (as the first run asked it) over the newer save: nothing changed
    # since that run, so nothing is asked, but the save went through and the page says so
    data["base_revision"] = [str(version.revision)]
    assert data[f"q-{key}-instructions"] == ["Which desk?"]
    after = client.post(base + "/try/", data).content.decode()
    version.refresh_from_db()
    assert version.document["desk"]["instructions"] == "Which desk?"
    assert "Nothing changed since run" in after and f'data-saved="{version.revision}"' in after


def test_a_try_is_cancelled_from_the_editor(provider, client):
    version, writer = a_set(2)
    plan = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=writer
    )
    run = tries.try_start(version=version, plan=plan, user=writer, enqueue=False)
    client.force_login(writer)
    page = client.post(f"/runs/{run.pk}/try/cancel/").content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled" and "cancelled" in page and provider.requests == []
