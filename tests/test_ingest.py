"""Production states coming in: scoped tokens (a read token fetches, an ingest token posts, each
to its sets), `POST /api/sets/<slug>/states` and every status it answers, all or nothing, the
redaction before storage (a canary that never reaches the database, a log line, a response, a
page or an export), deduplication by content, sampling by the state's hash, where the states
land (source, production's answers, version, label, time) and the command line
(`token --scope`, `ingest-config`, `ingest`, `states-export --source`)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from questions import roles, services
from questions.core import ingest, redaction, spec
from questions.models import (
    APIToken,
    IngestDay,
    SampleState,
    SampleStateRevision,
)
from questions.services import labels
from tests import factories
from tests.helpers import body, make_world, race, token_form
from tests.providers import run_cli

pytestmark = pytest.mark.django_db

NDJSON = "application/x-ndjson"

#: what must never be stored, logged, answered, shown or exported
CANARY_EMAIL = "canary.person@example.org"
CANARY_CARD = "4111 1111 1111 1111"
CANARY_CARD_NUMBER = 4012888888881881  # Luhn-valid, sent as a JSON number
CANARY_IBAN = "GB82 WEST 1234 5698 7654 32"
CANARY_PHONE = "+44 20 7946 0958"
CANARIES = (
    CANARY_EMAIL,
    CANARY_CARD,
    CANARY_CARD.replace(" ", ""),
    str(CANARY_CARD_NUMBER),
    CANARY_IBAN,
    CANARY_IBAN.replace(" ", ""),
    CANARY_PHONE,
)


@pytest.fixture
def shop():
    """A set `shop` (its first draft's questions: q0, a choice) and an ingest token for it."""
    qs = factories.question_set("shop")
    _, raw = services.api_token_create(
        name="shop app", user=roles.OPERATOR, scope="ingest", sets=["shop"]
    )
    return qs, raw


def post(client, raw, body, content_type=NDJSON, slug="shop", **headers):
    if isinstance(body, list):
        body = "\n".join(json.dumps(r) for r in body) + "\n"
    return client.post(
        f"/api/sets/{slug}/states",
        body,
        content_type=content_type,
        headers={"Authorization": f"Bearer {raw}", **headers},
    )


def records(n, start=0, **extra):
    return [
        {"state": {"n": i, "ticket": f"parcel {i} is late"}, **extra}
        for i in range(start, start + n)
    ]


def stored():
    return SampleState.objects.filter(source="production").count()


# --- tokens -----------------------------------------------------------------------------------


def test_a_read_token_fetches_and_an_ingest_token_does_not(client):
    make_world()  # set `s`, v1 approved under production
    _, reader = services.api_token_create(name="runtime", user=roles.OPERATOR)
    _, poster = services.api_token_create(
        name="app", user=roles.OPERATOR, scope="ingest", sets=["s"]
    )
    url = reverse("api-export", args=["s"]) + "?label=production"
    assert client.get(url, headers={"Authorization": f"Bearer {reader}"}).status_code == 200
    refused = client.get(url, headers={"Authorization": f"Bearer {poster}"})
    assert refused.status_code == 403
    assert refused.json()["code"] == "wrong_scope"
    assert "scope is ingest" in refused.json()["detail"]


def test_a_read_token_cannot_ingest(client, shop):
    _, reader = services.api_token_create(name="runtime", user=roles.OPERATOR)
    refused = post(client, reader, records(1))
    assert refused.status_code == 403
    assert refused.json()["code"] == "wrong_scope"
    assert "scope is read" in refused.json()["detail"]
    assert stored() == 0


def test_an_ingest_token_posts_only_to_its_sets(client, shop):
    factories.question_set("other")
    refused = post(client, shop[1], records(1), slug="other")
    assert refused.status_code == 403
    assert refused.json()["code"] == "wrong_set"
    assert "does not name the set other" in refused.json()["detail"]
    assert post(client, shop[1], records(1)).status_code == 202


def test_a_read_token_that_names_sets_fetches_only_theirs(client):
    make_world()
    factories.question_set("elsewhere")
    _, reader = services.api_token_create(name="rt", user=roles.OPERATOR, sets=["elsewhere"])
    refused = client.get(
        reverse("api-export", args=["s"]) + "?label=production",
        headers={"Authorization": f"Bearer {reader}"},
    )
    assert (refused.status_code, refused.json()["code"]) == (403, "wrong_set")


@pytest.mark.parametrize("authorization", ["", "Bearer ", "Bearer nope", "Basic abc"])
def test_no_good_token_is_a_401(client, shop, authorization):
    response = client.post(
        "/api/sets/shop/states",
        json.dumps({"state": {"n": 1}}),
        content_type="application/json",
        headers={"Authorization": authorization} if authorization else {},
    )
    assert response.status_code == 401 and response.json()["code"] == "no_valid_token"
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert stored() == 0


def test_a_revoked_token_is_a_401(client, shop):
    services.api_token_revoke(token=APIToken.objects.get(), user=roles.OPERATOR)
    assert post(client, shop[1], records(1)).status_code == 401


def test_an_ingest_token_names_a_set_that_exists():
    factories.question_set("shop")
    with pytest.raises(services.Invalid, match="names the sets it posts"):
        services.api_token_create(name="a", user=roles.OPERATOR, scope="ingest")
    with pytest.raises(services.Invalid, match="no set nowhere"):
        services.api_token_create(name="a", user=roles.OPERATOR, scope="ingest", sets=["nowhere"])
    with pytest.raises(services.Invalid, match="scope"):
        services.api_token_create(name="a", user=roles.OPERATOR, scope="write")
    assert not APIToken.objects.exists()


def test_the_tokens_page_makes_an_ingest_token_for_a_set(shop):
    client = Client()
    client.force_login(factories.reviewer())
    page = client.post(
        reverse("token-list"),
        {"name": "shop app 2", "scope": "ingest", "sets": "shop", **token_form(client)},
    )
    assert page.status_code == 200
    made = APIToken.objects.get(name="shop app 2")
    assert made.scope == "ingest"
    assert [qs.slug for qs in made.question_sets.all()] == ["shop"]
    raw = page.context["created"]
    assert raw in page.content.decode()
    assert "/api/sets/shop/states" in page.content.decode()  # the curl to try it with
    assert post(Client(), raw, records(1)).status_code == 202


def test_a_read_token_for_a_set_is_shown_with_a_curl_of_that_sets_export():
    other = factories.question_set("other")
    checker = factories.reviewer("rv")
    version = services.version_submit(version=factories.draft(other), author=other.owner)
    services.version_approve(
        version=version, reviewer=checker, label="staging", confirm_weak_evidence=True
    )
    make_world()  # set `s`: its production label is the one moved last
    client = Client()
    client.force_login(checker)
    page = client.post(
        reverse("token-list"),
        {"name": "reader", "scope": "read", "sets": "other", **token_form(client)},
    ).content.decode()
    assert "/api/sets/other/export.json?label=staging" in page
    assert "/api/sets/s/export.json" not in page  # a set this token cannot fetch


def test_the_tokens_page_says_why_it_made_no_token(shop):
    client = Client()
    client.force_login(factories.reviewer())
    page = client.post(
        reverse("token-list"), {"name": "x", "scope": "ingest", "sets": "", **token_form(client)}
    )
    assert page.status_code == 422
    assert "names the sets it posts" in page.content.decode()
    assert not APIToken.objects.filter(name="x").exists()


def test_the_command_line_makes_an_ingest_token(client, shop):
    code, out, _ = run_cli("token", "--name", "cli app", "--scope", "ingest", "--set", "shop")
    assert code == 0
    assert post(client, out.strip(), records(1)).status_code == 202
    code, _, err = run_cli("token", "--name", "cli app", "--scope", "ingest")
    assert code == 2
    assert "names the sets" in err


# --- the endpoint -----------------------------------------------------------------------------


def test_one_json_object_is_taken(client, shop):
    response = post(
        client,
        shop[1],
        json.dumps(
            {
                "state": {"ticket": "where is my parcel?"},
                "answers": {
                    "q0": {"choice": "o1", "probabilities": {"o1": 0.7}, "confidence": 0.6}
                },
                "version": 1,
                "label": "production",
                "at": "2025-03-01T08:30:00Z",
            }
        ),
        content_type="application/json",
    )
    assert response.status_code == 202
    assert response.json() == {
        "received": 1,
        "kept": 1,
        "duplicates": 0,
        "sampled_out": 0,
        "redacted": 0,
    }
    state = SampleState.objects.get()
    assert state.source == SampleState.Source.PRODUCTION
    assert state.state == {"ticket": "where is my parcel?"}
    assert state.expected == {}  # production's answers are not expected answers
    assert state.production_answers["q0"]["choice"] == "o1"
    assert (state.production_version, state.production_label) == (1, "production")
    assert state.observed_at == datetime(2025, 3, 1, 8, 30, tzinfo=UTC)
    assert state.state_sha256 == spec.state_sha256(state.state)
    assert state.current_revision().author is None  # nobody typed it


def test_ndjson_is_taken_and_csrf_does_not_apply(shop):
    client = Client(enforce_csrf_checks=True)
    response = post(client, shop[1], records(5), content_type="application/x-ndjson; charset=utf-8")
    assert response.status_code == 202
    assert response.json()["kept"] == 5
    assert stored() == 5
    assert SampleStateRevision.objects.filter(sample_state__source="production").count() == 5


def test_a_manual_state_is_manual(shop):
    services.sample_state_create(
        question_set=shop[0], name="typed", state={"a": 1}, author=shop[0].owner
    )
    typed = SampleState.objects.get(name="typed")
    assert typed.source == SampleState.Source.MANUAL
    assert typed.state_sha256 == spec.state_sha256({"a": 1})


def test_bad_json_is_a_400_naming_the_line_and_nothing_is_stored(client, shop):
    body = '{"state": {"n": 1}}\n{"state": {"n": 2}}\n{"state": {"secret": "x1y2"\n'
    response = post(client, shop[1], body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("Line 3 is not JSON")
    assert "x1y2" not in response.content.decode()
    assert stored() == 0
    assert not IngestDay.objects.exists()  # nothing counted against the quota either


@pytest.mark.parametrize(
    ("body", "content_type"), [(" ", "application/json"), ("\n\n", NDJSON), ("\r\n", NDJSON)]
)
def test_an_empty_request_is_a_400(client, shop, body, content_type):
    response = post(client, shop[1], body, content_type=content_type)
    assert response.status_code == 400
    assert "no state" in response.json()["detail"]


def test_more_than_a_thousand_lines_is_a_413(client, shop):
    response = post(client, shop[1], records(1001))
    assert response.status_code == 413
    assert "1,001 lines; at most 1,000" in response.json()["detail"]
    assert stored() == 0
    assert post(client, shop[1], records(1000)).json()["kept"] == 1000


def test_more_than_a_mebibyte_is_a_413(client, shop):
    big = json.dumps({"state": {"text": "x" * (2**20)}})
    response = post(client, shop[1], big, content_type="application/json")
    assert response.status_code == 413
    assert "at most 1,048,576" in response.json()["detail"]
    assert "xxxx" not in response.content.decode()
    assert stored() == 0


def test_another_content_type_is_a_415(client, shop):
    response = post(client, shop[1], "state=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "application/x-ndjson" in response.json()["detail"]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('["an", "array"]', "Line 2: a record is a JSON object"),
        ('{"state": ["a", "list"]}', "Line 2: the state is an array, not a JSON object"),
        ('{"state": "a text"}', "Line 2: the state is a string, not a JSON object"),
        ('{"ticket": "no state key"}', 'Line 2: unknown key "ticket"'),
        ('{"answers": {}}', "Line 2: no state"),
        ('{"state": {}, "version": "v1"}', "Line 2: version is the number"),
        ('{"state": {}, "at": "yesterday"}', "Line 2: at is not a time in ISO 8601 form"),
        (
            '{"state": {}, "at": 3}',
            "Line 2: at is an ISO 8601 time (2025-01-31T12:00:00Z), not a number",
        ),
        ('{"state": {}, "answers": {"q0": {"confidence": 3}}}', "confidence that is not from 0"),
    ],
)
def test_a_record_that_is_not_one_is_a_422_naming_the_line(client, shop, line, said):
    response = post(client, shop[1], '{"state": {"n": 1}}\n' + line + "\n")
    assert response.status_code == 422
    assert said in response.json()["detail"]
    assert "a text" not in response.json()["detail"]  # never a state's words
    assert stored() == 0


def test_all_or_nothing_a_bad_last_line_stores_none_of_the_good_ones(client, shop):
    body = [*records(50), {"state": 7}]
    assert post(client, shop[1], body).status_code == 422
    assert stored() == 0
    assert post(client, shop[1], records(50)).json()["kept"] == 50


def test_over_the_daily_quota_is_a_429_with_retry_after(client, shop):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, daily_quota=10)
    assert post(client, shop[1], records(8)).status_code == 202
    response = post(client, shop[1], records(3, start=100))
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 86_401
    assert "daily quota is 10" in response.json()["detail"]
    assert stored() == 8  # the request that would pass the quota stored nothing
    assert IngestDay.objects.get().received == 8
    assert post(client, shop[1], records(2, start=200)).status_code == 202  # 10 fits
    assert IngestDay.objects.get().received == 10


def test_a_request_larger_than_the_whole_quota_is_a_413_not_a_wait(client, shop):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, daily_quota=5)
    response = post(client, shop[1], records(6))
    assert response.status_code == 413 and "Retry-After" not in response
    assert (
        "holds 6 states" in response.json()["detail"] and "quota is 5" in response.json()["detail"]
    )
    assert stored() == 0 and not IngestDay.objects.filter(received__gt=0).exists()


def test_the_quota_counts_what_was_received_kept_or_not(client, shop):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, daily_quota=4)
    assert post(client, shop[1], records(2)).status_code == 202
    assert post(client, shop[1], records(2)).json()["duplicates"] == 2
    assert post(client, shop[1], records(1, start=50)).status_code == 429


# --- redaction --------------------------------------------------------------------------------


def canary_record(i: int = 0) -> dict:
    return {
        "state": {
            "n": i,
            "ticket": f"I am {CANARY_EMAIL}, card {CANARY_CARD}, call {CANARY_PHONE}",
            "payment": {"iban": CANARY_IBAN, "card": CANARY_CARD_NUMBER},
            CANARY_EMAIL: "a key is text too",
        },
        "answers": {"q0": {"choice": "o0", "note": f"for {CANARY_EMAIL}"}},
    }


def test_the_canary_never_reaches_the_database_a_log_a_response_a_page_or_an_export(
    client, shop, caplog, tmp_path
):
    caplog.set_level(logging.DEBUG)
    with override_settings(DEBUG=True):  # the queries are logged too (django.db.backends)
        response = post(client, shop[1], [canary_record(0), canary_record(1)])
        refused = post(client, shop[1], [canary_record(2), {"state": [CANARY_EMAIL]}])
    assert response.status_code == 202
    assert response.json()["redacted"] == 2
    assert refused.status_code == 422
    seen = [response.content.decode(), refused.content.decode(), caplog.text]
    with connection.cursor() as cursor:  # every table's every text, as stored
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            seen.append(repr(cursor.fetchall()))
    reader = Client()
    reader.force_login(factories.reviewer())
    state = SampleState.objects.filter(source="production").first()
    seen.append(reader.get(f"/sets/shop/states/{state.pk}/").content.decode())
    seen.append(body(reader.get("/sets/shop/states.jsonl")).decode())
    _, exported, _ = run_cli("states-export", "--set", "shop", "--format", "jsonl")
    seen.append(exported)
    for text in seen:
        for canary in CANARIES:
            assert canary not in text
    assert state.state["ticket"] == "I am [email], card [card], call [phone]"
    assert state.state["payment"] == {"iban": "[iban]", "card": "[card]"}
    assert "[email]" in state.state
    assert state.production_answers["q0"]["note"] == "for [email]"


def test_a_set_drops_paths_and_masks_patterns(client, shop):
    services.ingest_configure(
        question_set=shop[0],
        user=roles.OPERATOR,
        drop=["customer.name", "orders.address"],
        mask=[r"ORD-\d{6}"],
    )
    state = {
        "customer": {"name": "Ann Example", "tier": "gold"},
        "orders": [{"id": "ORD-123456", "address": "1 High St"}, {"id": "ORD-654321"}],
    }
    assert post(client, shop[1], [{"state": state}]).json()["redacted"] == 1
    assert SampleState.objects.get().state == {
        "customer": {"tier": "gold"},
        "orders": [{"id": "[masked]"}, {"id": "[masked]"}],
    }


def test_a_number_that_fails_the_luhn_check_is_kept(client, shop):
    post(client, shop[1], [{"state": {"order": "4111 1111 1111 1112", "id": 4111111111111112}}])
    assert SampleState.objects.get().state == {
        "order": "4111 1111 1111 1112",
        "id": 4111111111111112,
    }


def test_the_builtins_can_be_turned_off(client, shop):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, builtins=["email"])
    post(client, shop[1], [{"state": {"t": f"{CANARY_EMAIL} {CANARY_PHONE}"}}])
    assert SampleState.objects.get().state == {"t": f"[email] {CANARY_PHONE}"}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (f"write to {CANARY_EMAIL}.", True),
        ("card 5555-5555-5555-4444 on file", True),
        ("DE89 3704 0044 0532 0130 00", True),
        ("call +1 (555) 010-9999 now", True),
        ("order 2024-03-15 at 12:30, SKU 12345678", False),
        ("version 1.2.3.4 and 3.14159", False),
    ],
)
def test_the_builtins_find_what_jev_secrets_finds(text, found):
    """jev-secrets (the Jev ecosystem's redaction, an outside oracle) and the built-ins agree
    on what is personal data here: whatever it would replace, the built-ins leave none of."""
    from jev_secrets import Secrets

    oracle = Secrets({"standIns": "labels", "secretKeys": False, "key": "test"})
    replaced = {r["source"] for r in oracle.pseudo({"state": {"t": text}}).replacements}
    ours, changed = redaction.redact({"t": text}, redaction.rules())
    assert bool(replaced & {"email", "card", "iban", "phone"}) is found
    assert changed is found
    assert (ours["t"] != text) is found


def test_a_rule_that_cannot_work_is_refused_naming_it(shop):
    with pytest.raises(services.Invalid, match="not a regular expression"):
        services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, mask=["(unclosed"])
    with pytest.raises(services.Invalid, match="empty key"):
        services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, drop=["a..b"])
    with pytest.raises(services.Invalid, match="o built-in called"):
        services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, builtins=["ssn"])
    with pytest.raises(services.NotAllowed):
        services.ingest_configure(question_set=shop[0], user=factories.author(), keep_one_in=2)


# --- deduplication and sampling ---------------------------------------------------------------


def test_a_state_stored_already_is_a_duplicate(client, shop):
    services.sample_state_create(
        question_set=shop[0], name="typed", state={"b": 2, "a": 1}, author=shop[0].owner
    )
    body = [{"state": {"a": 1, "b": 2}}, {"state": {"c": 3}}, {"state": {"c": 3}}]
    assert post(client, shop[1], body).json() == {
        "received": 3,
        "kept": 1,
        "duplicates": 2,
        "sampled_out": 0,
        "redacted": 0,
    }
    assert post(client, shop[1], body).json()["duplicates"] == 3
    assert SampleState.objects.count() == 2


def test_states_that_differ_only_in_what_is_redacted_are_one(client, shop):
    body = [{"state": {"from": "ann@example.com"}}, {"state": {"from": "bob@example.com"}}]
    assert post(client, shop[1], body).json()["duplicates"] == 1


def test_the_duplicate_check_uses_the_index(shop):
    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, SampleState._meta.db_table)
    assert any(
        i["index"] and i["columns"] == ["question_set_id", "state_sha256"] for i in indexes.values()
    )


def test_sampling_keeps_one_in_n_by_the_states_hash(client, shop):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, keep_one_in=4)
    body = records(200)
    counts = post(client, shop[1], body).json()
    expected = [r for r in body if ingest.sampled_in(spec.sha256_of(r["state"]), 4)]
    assert counts["kept"] == len(expected)
    assert counts["kept"] + counts["sampled_out"] == 200
    assert 20 < counts["kept"] < 80  # about one in four
    assert {s.state["n"] for s in SampleState.objects.all()} == {r["state"]["n"] for r in expected}
    again = post(client, shop[1], body).json()  # the same states: the same ones in, or out
    assert (again["sampled_out"], again["duplicates"]) == (counts["sampled_out"], counts["kept"])


# --- where they land --------------------------------------------------------------------------


def test_the_states_list_filters_by_source(client, shop):
    services.sample_state_create(
        question_set=shop[0], name="typed", state={"typed": True}, author=shop[0].owner
    )
    post(client, shop[1], records(2))
    reader = Client()
    reader.force_login(factories.user())
    production = reader.get("/sets/shop/?state_source=production").content.decode()
    manual = reader.get("/sets/shop/?state_source=manual").content.decode()
    assert "production-" in production and ">typed</a>" not in production
    assert ">typed</a>" in manual and "production-" not in manual


def test_states_export_takes_a_source(shop, client):
    services.sample_state_create(
        question_set=shop[0], name="typed", state={"typed": True}, author=shop[0].owner
    )
    post(client, shop[1], records(2))
    code, out, err = run_cli(
        "states-export", "--set", "shop", "--format", "jsonl", "--source", "production"
    )
    assert code == 0
    names = [json.loads(line)["name"] for line in out.splitlines()]
    assert len(names) == 2 and all(n.startswith("production-") for n in names)
    assert "wrote 2 production sample states" in err


def test_a_production_state_is_labelled_like_any_other(client, shop):
    post(client, shop[1], records(1, answers={"q0": {"choice": "o1"}}))
    state = SampleState.objects.get()
    labelled = labels.state_label(
        sample=state, question_id="q0", answer="o0", labeller=shop[0].owner
    ).sample
    assert labelled.expected == {"q0": "o0"}
    assert labelled.production_answers == {"q0": {"choice": "o1"}}
    assert labelled.source == "production"


# --- the command line -------------------------------------------------------------------------


def test_ingest_config_prints_and_changes_the_settings(shop):
    code, out, _ = run_cli("ingest-config", "--set", "shop", "--json")
    assert code == 0
    assert json.loads(out) == {
        "set": "shop",
        "keep_one_in": 1,
        "retention_days": 30,
        "daily_quota": 100_000,
        "drop": [],
        "mask": [],
        "builtins": list(redaction.BUILTINS),
        "received_today": 0,
    }
    code, out, _ = run_cli(
        "ingest-config",
        "--set",
        "shop",
        "--keep-one-in",
        "10",
        "--retention-days",
        "7",
        "--daily-quota",
        "5000",
        "--drop",
        "customer.email",
        "--drop",
        "card",
        "--mask",
        r"ORD-\d+",
        "--builtins",
        "email,card",
        "--json",
    )
    shown = json.loads(out)
    assert code == 0
    assert (shown["keep_one_in"], shown["retention_days"], shown["daily_quota"]) == (10, 7, 5000)
    assert shown["drop"] == ["customer.email", "card"]
    assert shown["mask"] == [r"ORD-\d+"]
    assert shown["builtins"] == ["card", "email"]
    code, out, _ = run_cli("ingest-config", "--set", "shop", "--no-drop", "--builtins", "none")
    assert code == 0
    assert "drop: nothing" in out and "built-ins: none" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--keep-one-in", "0"), "Keep 1 in N is a whole number from 1"),
        (("--mask", "("), "not a regular expression"),
        (("--builtins", "ssn"), "o built-in called `ssn`"),
    ],
)
def test_ingest_config_refuses_what_cannot_work(shop, args, said):
    code, out, _ = run_cli("ingest-config", "--set", "shop", *args, "--json")
    assert code == 1
    assert json.loads(out)["status"] == 422
    assert said in json.loads(out)["detail"]


def test_ingest_config_of_no_set(shop):
    code, out, _ = run_cli("ingest-config", "--set", "nowhere", "--json")
    assert (code, json.loads(out)["status"]) == (1, 404)


def test_ingest_sends_a_file_through_the_same_path(shop, tmp_path):
    services.ingest_configure(question_set=shop[0], user=roles.OPERATOR, keep_one_in=1)
    path = tmp_path / "states.ndjson"
    path.write_text("\n".join(json.dumps(r) for r in [canary_record(), *records(3)]) + "\n")
    code, out, _ = run_cli("ingest", "--set", "shop", str(path))
    assert code == 0
    assert json.loads(out) == {
        "received": 4,
        "kept": 4,
        "duplicates": 0,
        "sampled_out": 0,
        "redacted": 1,
    }
    assert CANARY_EMAIL not in "".join(SampleState.objects.values_list("state_text", flat=True))
    code, out, _ = run_cli("ingest", "--set", "shop", str(path))
    assert json.loads(out)["duplicates"] == 4


def test_ingest_refuses_a_bad_file_whole(shop, tmp_path):
    path = tmp_path / "states.ndjson"
    path.write_text('{"state": {"n": 1}}\n{"state": {"n": 2}\n')
    code, out, _ = run_cli("ingest", "--set", "shop", str(path), "--json")
    assert code == 1
    assert json.loads(out)["status"] == 400
    assert "Line 2 is not JSON" in json.loads(out)["detail"]
    assert stored() == 0
    code, _, err = run_cli("ingest", "--set", "shop", str(tmp_path / "missing.ndjson"))
    assert code == 2 and "cannot read" in err


# --- the migration ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_hash_of_every_existing_state():
    from django.db.migrations.executor import MigrationExecutor

    qs = factories.question_set("old")
    for i in range(3):
        services.sample_state_create(
            question_set=qs, name=f"s{i}", state={"i": i, "z": [1, 2]}, author=qs.owner
        )
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("questions")
    try:
        executor.migrate([("questions", "0029_prove_holdout_share")])
        MigrationExecutor(connection).migrate([("questions", "0030_ingest_tokens_states")])
    finally:
        MigrationExecutor(connection).migrate(latest)
    for state in SampleState.objects.all():
        assert state.state_sha256 == spec.state_sha256(state.state)
        assert state.source == "manual"


# --- whatever the body -------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.lists(
            st.recursive(
                st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from([*ingest.FIELDS, "x"]), inner, max_size=4)
                ),
                max_leaves=12,
            ),
            max_size=4,
        ).map(lambda values: "\n".join(json.dumps(v) for v in values).encode()),
    ),
    ndjson=st.booleans(),
)
def test_any_body_is_read_or_refused_with_a_status(body, ndjson):
    try:
        read = ingest.read(body, ndjson=ndjson, max_lines=3, max_bytes=200, max_state_bytes=100)
    except ingest.BodyError as exc:
        assert exc.status in (400, 413, 422)
    else:
        assert all(isinstance(r.state, dict) for r in read)


@pytest.mark.django_db(transaction=True)
def test_requests_of_one_set_at_once_store_each_state_once():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers by locking the whole file")
    factories.question_set("shop")
    body = ("\n".join(json.dumps(r) for r in records(40)) + "\n").encode()
    results = race(
        4,
        lambda i: services.states_ingest(
            slug="shop", body=body, media_type=ingest.NDJSON, by=roles.OPERATOR
        ),
    )
    assert sorted(r.kept for r in results) == [0, 0, 0, 40], results
    assert stored() == 40
    assert IngestDay.objects.get().received == 160


def test_a_state_nested_too_deep_is_a_422(client, shop):
    deep = {"a": json.loads("[" * 500 + "]" * 500)}
    response = post(client, shop[1], [{"state": {"n": 1}}, {"state": deep}])
    assert response.status_code == 422
    said = response.json()["detail"]
    assert "Line 2: the record nests objects and arrays more than 100 deep" in said
    shallow = {"a": json.loads("[" * 90 + "]" * 90)}
    assert post(client, shop[1], [{"state": shallow}]).status_code == 202
