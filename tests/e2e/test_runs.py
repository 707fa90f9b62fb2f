"""In a real browser: a batch run's live progress bar, and the comparison screen's filters and
URL round trip."""

import threading

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.dev import standin
from questions.models import BatchRun
from tests import factories
from tests.helpers import COMPARE_DOC, answers, desk
from tests.providers import DOC

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


ANSWERED_BEFORE_THE_GATE = 3


@pytest.fixture
def gated_stand_in(settings):
    """A stand-in that answers the first calls and holds the rest until `.gate` is set: the run
    stands part-way for as long as the test needs, however slow the machine."""
    server = standin.make_server(latency_ms=50)
    gate, calls, lock = threading.Event(), [], threading.Lock()

    class Gated(server.RequestHandlerClass):
        def do_POST(self):
            with lock:
                calls.append(self.path)
                held = len(calls) > ANSWERED_BEFORE_THE_GATE
            if held:
                gate.wait(60)
            super().do_POST()

    server.RequestHandlerClass = Gated
    server.gate = gate
    standin.serve_in_background(server)
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    yield server
    gate.set()  # a failed test leaves no call held
    server.shutdown()
    server.server_close()


def test_the_progress_bar_moves_live_and_the_report_follows(page, sign_in, gated_stand_in):

    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("runs", owner=user, doc=DOC)
    for i in range(8):
        services.sample_state_create(
            question_set=qs, name=f"s{i}", state={"n": i}, author=user, expected={"urgent": True}
        )
    url = sign_in("author")
    page.goto(f"{url}/sets/runs/v1/")
    page.wait_for_load_state()
    batch = page.locator("#batch")
    batch.get_by_label("Backend").select_option("typesafe")
    batch.get_by_label("Concurrency").fill("1")
    batch.get_by_role("button", name="Start run").click()
    progress = page.locator("#run-progress progress")
    expect(progress).to_have_attribute("max", "8")
    expect(page.locator(".run-status")).to_have_text("queued")
    run = BatchRun.objects.get()
    worker = threading.Thread(target=services.batch_execute, args=(run.pk,), daemon=True)
    worker.start()  # the worker process, here a thread
    expect(page.locator(".run-status")).to_have_text("running", timeout=10000)
    # the page polls while the stand-in holds the fourth call: the bar stands part-way
    expect(progress).to_have_attribute("value", str(ANSWERED_BEFORE_THE_GATE), timeout=15000)
    gated_stand_in.gate.set()
    worker.join(30)
    expect(page.locator("p.pass-rate").first).to_be_visible(timeout=10000)  # reloaded when done
    expect(page.locator(".run-status")).to_have_text("done")


def test_compare_filters_and_the_url_round_trip(page, sign_in):
    from questions.models import BatchItem

    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("cmp", owner=user, doc=COMPARE_DOC)
    a = services.sample_state_create(
        question_set=qs, name="a", state=1, author=user, expected={"desk": "billing"}
    )
    services.sample_state_create(question_set=qs, name="b", state=2, author=user)
    version = services.open_draft(qs)
    base = services.batch_create(version=version, backend="recorded", user=user, enqueue=False)
    new = services.batch_create(version=version, backend="recorded", user=user, enqueue=False)
    for item in BatchItem.objects.select_related("sample_state"):
        moved = item.run_id == new.pk and item.sample_state.sample_state_id == a.pk
        item.status = "answered"
        item.answers = answers(
            desk(
                "tech" if moved else "billing",
                {"billing": 0.3 if moved else 0.8, "tech": 0.7 if moved else 0.2},
            ),
            0.7,
            1.0,
        )
        item.save()
    url = sign_in("author")
    page.goto(f"{url}/sets/cmp/compare/")
    rows = page.locator("table.compare tbody tr")
    expect(rows).to_have_count(6)  # 2 states × 3 questions, the newest two runs
    page.get_by_role("link", name="changes only").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("a")
    expect(rows.first.locator(".flip-mark")).to_have_text("flip")
    assert "filter=changes" in page.url and f"col=run%3A{base.pk}" in page.url
    shared = page.url
    page.goto(f"{url}/")
    page.goto(shared)  # a link reproduces the view
    expect(rows).to_have_count(1)
    page.get_by_role("link", name="failures against expected").click()
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td.fail")).to_have_count(1)
    page.get_by_role("link", name="all", exact=True).click()
    expect(rows).to_have_count(6)


def test_compare_loads_the_next_states_as_the_table_scrolls(page, sign_in, monkeypatch):
    from questions.models import BatchItem
    from questions.selectors import comparison

    monkeypatch.setattr(comparison, "PAGE_STATES", 4)  # the live server runs in this process
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("paged", owner=user, doc=COMPARE_DOC)
    for i in range(10):
        services.sample_state_create(question_set=qs, name=f"state-{i:02d}", state=i, author=user)
    version = services.open_draft(qs)
    for _ in range(2):
        services.batch_create(version=version, backend="recorded", user=user, enqueue=False)
    BatchItem.objects.update(
        status="answered", answers=answers(desk("billing", {"billing": 0.8}), 0.7, 1.0)
    )
    url = sign_in("author")
    page.set_viewport_size({"width": 1280, "height": 600})
    page.goto(f"{url}/sets/paged/compare/")
    names = page.locator("table.compare tbody a.state-link")
    expect(names.first).to_have_text("state-00")
    page.locator("table.compare tbody tr.more-rows").scroll_into_view_if_needed()
    expect(page.get_by_role("link", name="state-04").first).to_be_visible()
    for _ in range(5):  # scroll to the end until every state is there
        page.mouse.wheel(0, 5000)
        page.wait_for_timeout(200)
    expect(names).to_have_count(10 * len(COMPARE_DOC))
    expect(page.locator("tr.more-rows")).to_have_count(0)
    names.nth(3 * len(COMPARE_DOC)).click()  # a state's name opens that state alone
    expect(names).to_have_count(len(COMPARE_DOC))
    expect(page.locator("select[name=state]")).to_have_value(
        str(qs.sample_states.get(name="state-03").pk)
    )
