"""Who fetched what: every export fetch by a token is counted in one row per token, label and
minute (an upsert), with the latest fetch's version, ETag and status; a process writes at once
what the set page must learn at once (a new poller, another version served) and the rest of a
minute's count at its next write. The set page says per label who fetched it last and warns of a
label that moved with nothing fetching it since; `questions fetches` lists the same per token."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from questions import roles, services
from questions.models import ExportFetch, Label, QuestionSet, Version
from questions.services import fetches
from tests import factories
from tests.helpers import make_world
from tests.providers import run_cli

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


@pytest.fixture(autouse=True)
def no_timer(monkeypatch):
    """Nothing is written on a timer: only at once (a new poller, another version) or when a
    test flushes (each test starts with nothing counted: tests/conftest.py)."""
    monkeypatch.setattr(fetches, "FLUSH_EVERY", 3600.0)


@pytest.fixture
def raw_token():
    make_world()
    _, raw = services.api_token_create(name="runtime-prod", user=roles.OPERATOR)
    return raw


def fetch(client, raw, *, label="production", **headers):
    query = {"label": label} if label else {"version": "1"}
    return client.get(
        reverse("api-export", args=["s"]),
        query,
        headers={"Authorization": f"Bearer {raw}", **headers},
    )


def _ids():
    qs = QuestionSet.objects.get(slug="s")
    token = services.tokens.APIToken.objects.get(name="runtime-prod")
    return token.pk, qs.pk, qs.versions.get(number=1).pk


def test_the_fetches_of_one_minute_are_one_row_that_counts_them(raw_token):
    token, qset, v1 = _ids()
    minute = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=10)
    for seconds in (5, 20, 40):
        services.export_fetch_record(
            token_id=token,
            set_id=qset,
            label="production",
            version_id=v1,
            etag="abc",
            status=304,
            now=minute + timedelta(seconds=seconds),
        )
    # the first was written at once (a poller this process has not written yet); the other
    # two are counted in memory until the next write
    assert list(ExportFetch.objects.values_list("fetches", flat=True)) == [1]
    services.export_fetches_flush()
    row = ExportFetch.objects.get()
    assert (row.minute, row.fetches) == (minute, 3)
    assert row.last_fetched_at == minute + timedelta(seconds=40)
    services.export_fetch_record(
        token_id=token,
        set_id=qset,
        label="production",
        version_id=v1,
        etag="abc",
        status=304,
        now=minute + timedelta(seconds=65),
    )
    services.export_fetches_flush()
    assert list(ExportFetch.objects.order_by("minute").values_list("minute", "fetches")) == [
        (minute, 3),
        (minute + timedelta(minutes=1), 1),
    ]


def test_another_version_served_is_written_at_once(raw_token):
    token, qset, v1 = _ids()
    now = timezone.now()
    common = {"token_id": token, "set_id": qset, "label": "production", "status": 200}
    services.export_fetch_record(**common, version_id=v1, etag="one", now=now)
    services.export_fetch_record(**common, version_id=v1, etag="two", now=now)
    assert ExportFetch.objects.get().etag == "two"


def test_two_processes_add_their_counts_and_keep_the_latest_fetch(raw_token):
    token, qset, v1 = _ids()
    v2 = Version.objects.get(question_set_id=qset, number=2).pk
    minute = timezone.now().replace(second=0, microsecond=0)
    common = {"token_id": token, "set_id": qset, "label": "production", "status": 200}
    services.export_fetch_record(**common, version_id=v2, etag="new", now=minute.replace(second=30))
    services.export_fetches_forget()  # another process: it wrote nothing yet
    services.export_fetch_record(**common, version_id=v1, etag="old", now=minute.replace(second=10))
    row = ExportFetch.objects.get()
    assert (row.fetches, row.version_id, row.etag) == (2, v2, "new")
    assert row.last_fetched_at == minute.replace(second=30)


def test_a_200_and_a_304_are_logged_with_the_etag_served(client, raw_token):
    first = fetch(client, raw_token)
    assert first.status_code == 200
    etag = first["ETag"]
    assert fetch(client, raw_token, **{"If-None-Match": etag}).status_code == 304
    row = ExportFetch.objects.get()
    assert (row.status, row.fetches, row.etag) == (200, 1, etag.strip('"'))
    services.export_fetches_flush()
    row.refresh_from_db()
    assert (row.status, row.fetches, row.label) == (304, 2, "production")
    assert row.version == Version.objects.get(question_set__slug="s", number=1)
    assert row.token.name == "runtime-prod"


def test_refused_fetches_are_not_logged_and_nothing_of_the_secret_is_kept(client, raw_token):
    assert fetch(client, "dct_not-a-token").status_code == 401
    assert fetch(client, raw_token, label="nope").status_code == 404
    services.export_fetches_flush()
    assert not ExportFetch.objects.exists()
    assert fetch(client, raw_token, **{"Accept-Encoding": "gzip"}).status_code == 200
    services.export_fetches_flush()
    stored = json.dumps(list(ExportFetch.objects.values()), default=str)
    secret = raw_token.removeprefix("dct_")
    assert secret[:6] not in stored and hashlib.sha256(raw_token.encode()).hexdigest() not in stored
    assert "W/" not in stored  # the entity tag itself, as either form of it matches


def test_the_set_page_says_who_fetched_each_label(client, raw_token):
    token, qset, v1 = _ids()
    services.export_fetch_record(
        token_id=token,
        set_id=qset,
        label="production",
        version_id=v1,
        etag="abc",
        status=304,
        now=timezone.now() - timedelta(minutes=3, seconds=5),
    )
    client.force_login(factories.author("reader"))
    page = client.get(reverse("set-detail", args=["s"])).content.decode()
    assert "fetched 3\xa0minutes ago by <code>runtime-prod</code> (v1)" in page
    assert "nothing has fetched it since" not in page


def test_a_moved_label_is_warned_of_until_something_fetches_it(client, raw_token):
    token, qset, v1 = _ids()
    services.export_fetch_record(
        token_id=token,
        set_id=qset,
        label="production",
        version_id=v1,
        etag="abc",
        status=304,
        now=timezone.now() - timedelta(minutes=5),
    )
    checker = factories.user("checker2", groups=(roles.REVIEWERS,))
    v2 = Version.objects.get(question_set_id=qset, number=2)
    v2 = services.version_approve(confirm_weak_evidence=True, version=v2, reviewer=checker)
    services.label_move(
        question_set=QuestionSet.objects.get(pk=qset), name="production", version=v2, actor=checker
    )
    client.force_login(factories.author("reader"))
    url = reverse("set-detail", args=["s"])
    page = client.get(url).content.decode()
    assert "Moved to v2 just now and nothing has fetched it since" in page
    assert "the runtime may still serve v1" in page
    assert fetch(client, raw_token).status_code == 200  # the runtime picks v2 up
    page = client.get(url).content.decode()
    assert "nothing has fetched it since" not in page
    assert "fetched just now by <code>runtime-prod</code> (v2)" in page
    assert Label.objects.get(name="production").version == v2


def test_a_label_never_fetched_says_so(client, raw_token):
    client.force_login(factories.author("reader"))
    page = client.get(reverse("set-detail", args=["s"])).content.decode()
    assert "not fetched yet" in page and "nothing has fetched it since" not in page


def test_the_cli_lists_the_latest_fetch_per_label_and_token(client, raw_token):
    etag = fetch(client, raw_token)["ETag"]
    fetch(client, raw_token, **{"If-None-Match": etag})
    fetch(client, raw_token, label=None)  # by version: no label
    _, other = services.api_token_create(name="runtime-staging", user=roles.OPERATOR)
    fetch(client, other)
    services.export_fetches_flush()
    code, out, err = run_cli("fetches", "--set", "s", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["label"], r["token"], r["status"], r["fetches"]) for r in rows] == [
        ("production", "runtime-staging", 200, 1),
        ("production", "runtime-prod", 304, 2),
        (None, "runtime-prod", 200, 1),
    ]
    assert set(rows[0]) == {
        "label",
        "token",
        "last_fetched_at",
        "version",
        "etag",
        "status",
        "fetches",
    }
    assert rows[1]["version"] == 1 and rows[1]["etag"] == etag.strip('"')
    code, out, _ = run_cli("fetches", "--set", "s")
    assert code == 0 and "production: runtime-prod fetched v1 at" in out
    assert "(by version): runtime-prod" in out
    assert "), 2 fetches logged" in out and "), 1 fetch logged" in out


def test_the_cli_names_a_missing_set(raw_token):
    code, out, _ = run_cli("fetches", "--set", "nope", "--json")
    assert code == 1 and json.loads(out) == {"status": 404, "detail": "There is no set nope."}
    code, out, _ = run_cli("fetches", "--set", "s")
    assert code == 0 and "no export fetches logged" in out


def test_the_set_page_costs_the_same_however_many_fetches_are_logged(client, raw_token):
    token, qset, v1 = _ids()
    client.force_login(factories.author("reader"))
    url = reverse("set-detail", args=["s"])
    now = timezone.now()
    services.export_fetch_record(
        token_id=token, set_id=qset, label="production", version_id=v1, etag="a", status=200
    )
    with CaptureQueriesContext(connection) as one:
        client.get(url)
    other, _ = services.api_token_create(name="runtime-other", user=roles.OPERATOR)
    for minutes in range(1, 40):
        for who in (token, other.pk):
            services.export_fetch_record(
                token_id=who,
                set_id=qset,
                label="production",
                version_id=v1,
                etag="a",
                status=304,
                now=now - timedelta(minutes=minutes),
            )
    services.export_fetches_flush()
    assert ExportFetch.objects.count() == 1 + 2 * 39
    with CaptureQueriesContext(connection) as many:
        page = client.get(url).content.decode()
    assert len(many) == len(one)
    assert "fetched just now by <code>runtime-prod</code> (v1)" in page


def test_a_log_write_that_fails_is_logged_and_the_fetch_is_served(
    client, raw_token, monkeypatch, caplog
):
    class Down:
        ops = connection.ops

        def cursor(self):
            raise DatabaseError("the database went away")

    monkeypatch.setattr(fetches, "connection", Down())
    assert fetch(client, raw_token).status_code == 200
    assert "export fetch log: a row was not written" in caplog.text
    assert not ExportFetch.objects.exists()
