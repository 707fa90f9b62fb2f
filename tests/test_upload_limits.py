"""A file of sample states holds at most `DECISIONS_UPLOAD_MAX_ROWS` records: the set page's
upload and the CLI's `states-import` refuse a larger one before anything is stored, saying the
limit and how to load more; the reader stops at the first record past the limit (a million-row
file is neither read to its end nor parsed)."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from questions.core import spec, state_files
from questions.models import SampleState
from tests import factories
from tests.helpers import write
from tests.providers import run_cli

pytestmark = pytest.mark.both_databases

MILLION = 1_000_000


def csv_of(rows: int) -> bytes:
    """A header and `rows` records `r<i>,{}`, as the review's reproduction wrote them."""
    return b"name,state\n" + b"".join(b"r%d,{}\n" % i for i in range(rows))


def jsonl_of(rows: int) -> str:
    return "".join(json.dumps({"name": f"r{i}", "state": [i]}) + "\n" for i in range(rows))


def says_the_limit(message: str, limit: int) -> bool:
    return (
        f"more than {limit:,} records" in message
        and "DECISIONS__UPLOAD_MAX_ROWS" in message
        and "several files" in message
        and "states-import" in message
    )


def test_a_million_row_csv_is_refused_after_reading_only_the_limits_worth():
    data = csv_of(MILLION)
    assert len(data) > 10_000_000  # under the upload's byte limit
    stream = io.BytesIO(data)
    tracemalloc.start()
    try:
        with pytest.raises(state_files.TooManyRecords) as refused:
            state_files.read(stream, filename="big.csv", max_records=20_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert says_the_limit(str(refused.value), 20_000)
    assert str(refused.value).startswith("line 20002: ")  # the first record past the limit
    assert stream.tell() < len(data) // 40  # a prefix of the file was read, not the rest
    assert peak < 64 * 2**20  # the whole file parsed held ~650 MB


def test_a_file_at_the_limit_is_read_whole():
    for data, name in ((csv_of(500), "s.csv"), (jsonl_of(500).encode(), "s.jsonl")):
        rows = state_files.read(io.BytesIO(data), filename=name, max_records=500)
        assert [r.item["name"] for r in rows] == [f"r{i}" for i in range(500)]
        with pytest.raises(state_files.TooManyRecords, match="more than 499 records"):
            state_files.read(data, filename=name, max_records=499)


def test_blank_lines_are_not_records():
    data = b"name,state\n\na,1\n\n\nb,2\n\n"
    assert len(state_files.read(data, filename="s.csv", max_records=2)) == 2
    assert len(state_files.read(b'\n{"name": "a", "state": 1}\n\n', max_records=1)) == 1


# --- the set page's upload and the CLI ---------------------------------------------------------


@pytest.fixture
def owner():
    return factories.author("owner")


@pytest.fixture
def qs(owner):
    return factories.question_set("up", owner=owner)


def _upload(client, slug: str, name: str, data: bytes):
    return client.post(
        reverse("states-upload", args=[slug]), {"states": SimpleUploadedFile(name, data)}
    )


@pytest.mark.django_db
def test_the_page_refuses_a_million_row_csv_at_the_default_limit_and_stores_nothing(
    client, qs, owner, settings
):
    assert settings.DECISIONS_UPLOAD_MAX_ROWS == 20_000  # the default
    client.force_login(owner)
    response = _upload(client, "up", "big.csv", csv_of(MILLION))
    assert response.status_code == 422
    page = response.content.decode()
    assert says_the_limit(page, 20_000) and "Nothing was imported" in page
    assert not SampleState.objects.exists()


@pytest.mark.django_db
def test_the_page_takes_a_file_at_the_limit_and_refuses_one_more(client, qs, owner, settings):
    settings.DECISIONS_UPLOAD_MAX_ROWS = 40
    client.force_login(owner)
    response = _upload(client, "up", "over.csv", csv_of(41))
    assert response.status_code == 422 and says_the_limit(response.content.decode(), 40)
    assert not SampleState.objects.exists()
    response = _upload(client, "up", "at.jsonl", jsonl_of(40).encode())
    assert response.status_code == 302
    assert SampleState.objects.filter(question_set=qs).count() == 40


@pytest.mark.django_db
def test_the_cli_takes_a_file_at_the_limit_and_refuses_one_more(qs, tmp_path, settings):
    settings.DECISIONS_UPLOAD_MAX_ROWS = 40
    over = write(tmp_path, jsonl_of(41), "over.jsonl")
    code, out, err = run_cli("states-import", over, "--set", "up", "--user", "owner")
    assert code == 1 and says_the_limit(err, 40) and "nothing was imported" in err
    assert not SampleState.objects.exists()
    array = write(tmp_path, [{"name": f"a{i}", "state": i} for i in range(41)], "over.json")
    assert run_cli("states-import", array, "--set", "up", "--user", "owner")[0] == 1
    assert not SampleState.objects.exists()
    at = write(tmp_path, jsonl_of(40), "at.jsonl")
    code, out, _ = run_cli("states-import", at, "--set", "up", "--user", "owner")
    assert (code, out.strip()) == (0, "up: 40 sample states imported")
    assert SampleState.objects.filter(question_set=qs).count() == 40


@pytest.mark.django_db
def test_the_cli_reads_a_long_file_no_further_than_one_record_past_the_limit(
    qs, tmp_path, settings, monkeypatch
):
    settings.DECISIONS_UPLOAD_MAX_ROWS = 40
    long = write(tmp_path, jsonl_of(100_000), "long.jsonl")
    parsed = []
    loads = spec.loads
    monkeypatch.setattr(spec, "loads", lambda raw: parsed.append(len(raw)) or loads(raw))
    code, _, err = run_cli("states-import", long, "--set", "up", "--user", "owner")
    assert code == 1 and says_the_limit(err, 40)
    assert len(parsed) == 1 + 41  # the whole text once (not one JSON value), then 41 lines
    assert not SampleState.objects.exists()
