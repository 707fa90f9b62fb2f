"""Teams: a set belongs to a team, a user acts on it through their role there, a member of another
team learns nothing of it (404, on every command too); the default team that the groups of
before became; the team's members and admins; a set moved between teams; the command line."""

from __future__ import annotations

import argparse
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from questions import roles, services
from questions.cli.commands import add_subcommands
from questions.models import Membership, QuestionSet, Team, Version
from tests import factories
from tests.helpers import AD, AU, R, V, make_other_team, make_world, suggestion_world, write
from tests.providers import run_cli

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- roles per team ----------------------------------------------------------------------------


def test_a_user_holds_different_roles_in_different_teams():
    payments, support = factories.team("payments"), factories.team("support")
    lee = factories.user("lee", role=roles.AUTHOR, team=payments)
    services.member_set(team=support, username="lee", role=roles.VIEWER, user=roles.OPERATOR)
    roles.forget(lee)
    ours = factories.question_set("refunds", team=payments)
    theirs = factories.question_set("tickets", team=support)
    services.sample_state_create(question_set=ours, name="a", state=1, author=lee)
    with pytest.raises(services.NotAllowed):
        services.sample_state_create(question_set=theirs, name="a", state=1, author=lee)
    assert (roles.role_in(lee, payments), roles.role_in(lee, support)) == ("author", "viewer")
    assert _client(lee).get(theirs.get_absolute_url()).status_code == 200  # a viewer reads


def test_a_member_of_another_team_gets_404_from_the_service_not_403():
    elsewhere = factories.team("elsewhere")
    outsider = factories.admin("outsider", team=elsewhere)
    qs = factories.question_set("s")
    with pytest.raises(services.NotFound, match=r"There is no set s\."):
        services.sample_state_create(question_set=qs, name="x", state=1, author=outsider)
    with pytest.raises(services.NotFound):
        services.version_submit(version=factories.draft(qs), author=outsider)
    assert qs.sample_states.count() == 0 and factories.draft(qs) is not None


def test_lists_show_only_the_sets_of_the_users_teams():
    elsewhere = factories.team("elsewhere")
    mine = factories.question_set("mine-refunds", team=elsewhere)
    factories.question_set("their-refunds")  # the default team's
    services.version_submit(version=factories.draft(mine), author=mine.owner)
    viewer = factories.user("v", role=roles.VIEWER, team=elsewhere)
    client = _client(viewer)
    listed = client.get(reverse("set-list"), {"q": "refunds"}).content.decode()
    assert "mine-refunds" in listed and "their-refunds" not in listed
    queue = client.get(reverse("review-queue")).content.decode()
    assert "/sets/mine-refunds/" in queue
    teams = client.get(reverse("team-list")).content.decode()
    assert "elsewhere" in teams and "Default team" not in teams


def test_a_one_team_install_shows_no_team_column():
    factories.question_set("s")
    page = _client(factories.author("writer")).get(reverse("set-list")).content.decode()
    assert "/sets/s/" in page and ">Team<" not in page


# --- the default team: what the groups became -------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_the_groups_roles_of_the_default_team_and_back():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("questions")
    before = [("questions", "0032_suggestions")]
    users = get_user_model().objects
    try:
        executor.migrate(before)
        old = MigrationExecutor(connection).loader.project_state(before).apps
        authors = Group.objects.get_or_create(name=roles.AUTHORS)[0]  # made again going back
        reviewers = Group.objects.get_or_create(name=roles.REVIEWERS)[0]
        made = {name: users.create_user(name) for name in ("w", "c", "both", "staff", "plain")}
        made["w"].groups.add(authors)
        made["c"].groups.add(reviewers)
        made["both"].groups.add(authors, reviewers)
        made["staff"].is_staff = True
        made["staff"].save()
        old_set = old.get_model("questions", "QuestionSet")
        old_set.objects.create(slug="old", name="old", owner_id=made["w"].pk)
        old.get_model("questions", "APIToken").objects.create(
            name="rt", prefix="dct_x", token_sha256="0" * 64
        )
        MigrationExecutor(connection).migrate(latest)
        found = dict(
            Membership.objects.filter(team__slug=Team.DEFAULT).values_list("user__username", "role")
        )
        assert found == {
            "w": "author",
            "c": "reviewer",
            "both": "admin",
            "staff": "admin",
            "plain": "viewer",
        }
        assert QuestionSet.objects.get(slug="old").team.slug == Team.DEFAULT
        assert not Group.objects.filter(name__in=(roles.AUTHORS, roles.REVIEWERS)).exists()
        MigrationExecutor(connection).migrate(before)  # back: the groups again
        back = {
            g.name: set(g.user_set.values_list("username", flat=True)) for g in Group.objects.all()
        }
        assert back == {"authors": {"w", "both", "staff"}, "reviewers": {"c", "both", "staff"}}
    finally:
        MigrationExecutor(connection).migrate(latest)


# --- members and admins ------------------------------------------------------------------------


def test_a_team_admin_adds_a_member_as_reviewer_on_the_team_page():
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    get_user_model().objects.create_user("kim")
    client = _client(boss)
    response = client.post(
        reverse("member-save", args=["payments"]), {"username": "kim", "role": "reviewer"}
    )
    assert response.status_code == 302
    assert Membership.objects.get(team=team, user__username="kim").role == "reviewer"
    page = client.get(reverse("team-detail", args=["payments"])).content.decode()
    assert "kim" in page and "reviewer" in page


@pytest.mark.parametrize("role", [V, AU, R])
def test_only_a_team_admin_changes_its_members(role):
    team = factories.team("payments")
    actor = factories.user(f"{role}-1", role=role, team=team)
    get_user_model().objects.create_user("kim")
    with pytest.raises(services.NotAllowed):
        services.member_set(team=team, username="kim", role="admin", user=actor)
    response = _client(actor).post(
        reverse("member-save", args=["payments"]), {"username": "kim", "role": "admin"}
    )
    assert response.status_code == 403
    assert not Membership.objects.filter(user__username="kim").exists()


def test_a_team_keeps_one_admin():
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    with pytest.raises(services.Conflict, match="last admin"):
        services.member_set(team=team, username="boss", role="viewer", user=boss)
    with pytest.raises(services.Conflict, match="last admin"):
        services.member_remove(team=team, username="boss", user=boss)
    factories.admin("second", team=team)
    services.member_set(team=team, username="boss", role="viewer", user=boss)
    assert roles.role_in(get_user_model().objects.get(username="boss"), team) == "viewer"


def test_only_the_operator_or_a_superuser_creates_a_team():
    with pytest.raises(services.NotAllowed):
        services.team_create(slug="x", user=factories.admin("boss"))
    root = get_user_model().objects.create_superuser("root")
    assert services.team_create(slug="x", user=root).slug == "x"
    with pytest.raises(services.Conflict):
        services.team_create(slug="x", user=roles.OPERATOR)
    with pytest.raises(services.Invalid):
        services.team_create(slug="Not A Slug", user=roles.OPERATOR)


def test_a_set_moves_only_by_an_admin_of_both_teams_and_leaves_the_old_tokens_behind():
    support = factories.team("support")
    qs = factories.question_set("s")
    services.version_approve(
        version=services.version_submit(version=factories.draft(qs), author=qs.owner),
        reviewer=factories.reviewer("checker"),
        confirm_weak_evidence=True,
        label="production",
    )
    _, raw = services.api_token_create(name="rt", user=roles.OPERATOR, sets=["s"])
    half = factories.admin("half")  # an admin of the default team only
    with pytest.raises(services.NotFound):
        services.set_move(question_set=qs, to=support, user=half)
    services.member_set(team=support, username="half", role="admin", user=roles.OPERATOR)
    roles.forget(half)
    services.set_move(question_set=qs, to=support, user=half)
    assert QuestionSet.objects.get(slug="s").team == support
    fetched = Client().get(
        "/api/sets/s/export.json?label=production", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )
    assert fetched.status_code == 404


# --- the command line --------------------------------------------------------------------------


def test_team_and_member_commands(tmp_path):
    get_user_model().objects.create_user("kim")
    code, out, _ = run_cli("team", "--create", "payments", "--name", "Payments", "--json")
    assert code == 0 and json.loads(out)["team"] == "payments"
    code, out, _ = run_cli(
        "member", "--team", "payments", "--user", "kim", "--role", "admin", "--json"
    )
    assert (code, json.loads(out)) == (0, {"team": "payments", "user": "kim", "role": "admin"})
    code, out, _ = run_cli(
        "import",
        write(tmp_path, factories.document()),
        "--set",
        "refunds",
        "--team",
        "payments",
        "--user",
        "kim",
        "--json",
    )
    assert code == 0 and QuestionSet.objects.get(slug="refunds").team.slug == "payments"
    code, out, _ = run_cli("team", "--json")
    listed = {t["team"]: t for t in json.loads(out)}
    assert listed["payments"]["sets"] == ["refunds"]
    assert listed["payments"]["members"] == [{"user": "kim", "role": "admin"}]
    code, out, _ = run_cli("member", "--team", "payments", "--user", "kim", "--remove", "--json")
    assert code == 1 and json.loads(out)["status"] == 409  # the last admin stays


def test_import_without_a_team_goes_to_the_default_team_and_a_set_stays_in_its_team(tmp_path):
    factories.team("payments")
    doc = write(tmp_path, factories.document())
    writer = factories.admin("writer")
    code, out, _ = run_cli("import", doc, "--set", "s", "--user", "writer", "--json")
    assert code == 0 and QuestionSet.objects.get(slug="s").team.slug == Team.DEFAULT
    services.version_submit(
        version=factories.draft(QuestionSet.objects.get(slug="s")), author=writer
    )
    code, out, _ = run_cli(
        "import", doc, "--set", "s", "--team", "payments", "--user", "writer", "--json"
    )
    assert code == 1 and json.loads(out)["status"] == 404  # writer is no member of payments


def test_move_set_on_the_command_line_needs_an_admin_of_both(tmp_path):
    factories.team("support")
    factories.question_set("s")
    factories.admin("half")
    code, out, _ = run_cli("team", "--move-set", "s", "--to", "support", "--user", "half", "--json")
    assert code == 1 and json.loads(out)["status"] == 404
    run_cli("member", "--team", "support", "--user", "half", "--role", "admin")
    code, out, _ = run_cli("team", "--move-set", "s", "--to", "support", "--user", "half", "--json")
    assert (code, json.loads(out)) == (0, {"set": "s", "from": "default", "to": "support"})


#: every command that acts as a user on a set (`--user`, or `--by` for the team commands), as a
#: member of the other team would run it against the first team's set `s` (or team `default`)
CROSS_TEAM_COMMANDS = {
    "import": lambda d: ["import", d["doc"], "--set", "s", "--user", d["author"]],
    "states-import": lambda d: [
        "states-import",
        d["states"],
        "--set",
        "s",
        "--user",
        d["author"],
    ],
    "lint-accept": lambda d: [
        "lint-accept",
        "--set",
        "s",
        "--version",
        "3",
        "--question",
        "q0",
        "--code",
        "numeric_representation",
        "--reason",
        "r",
        "--user",
        d["author"],
    ],
    "submit": lambda d: ["submit", "--set", "s", "--version", "3", "--user", d["author"]],
    "approve": lambda d: [
        "approve",
        "--set",
        "s",
        "--version",
        "2",
        "--user",
        d["reviewer"],
    ],
    "label": lambda d: [
        "label",
        "--set",
        "s",
        "--label",
        "staging",
        "--version",
        "1",
        "--user",
        d["reviewer"],
    ],
    "request-changes": lambda d: [
        "request-changes",
        "--set",
        "s",
        "--version",
        "2",
        "--user",
        d["reviewer"],
        "--note",
        "no",
    ],
    "records-import": lambda d: [
        "records-import",
        d["records"],
        "--set",
        "s",
        "--user",
        d["author"],
    ],
    "state-label": lambda d: [
        "state-label",
        "--set",
        "s",
        "--state",
        "n",
        "--question",
        "q0",
        "--answer",
        "o0",
        "--user",
        d["author"],
    ],
    "labelling": lambda d: [
        "labelling",
        "--set",
        "s",
        "--needed",
        "2",
        "--user",
        d["admin"],
    ],
    "disputes": lambda d: [
        "disputes",
        "--set",
        "s",
        "--settle",
        "n",
        "--question",
        "q0",
        "--answer",
        "o0",
        "--user",
        d["admin"],
    ],
    "holdout": lambda d: ["holdout", "--set", "s", "--share", "30", "--user", d["admin"]],
    "token": lambda d: ["token", "--name", "x", "--team", "default", "--by", d["admin"]],
    "suggest": lambda d: [
        "suggest",
        "--set",
        "sug",
        "--version",
        "1",
        "--question",
        "q0",
        "--apply",
        "1",
        "--user",
        d["author"],
    ],
    "team": lambda d: ["team", "--move-set", "s", "--to", "elsewhere", "--user", d["admin"]],
    "member": lambda d: [
        "member",
        "--team",
        "default",
        "--user",
        d["admin"],
        "--role",
        "admin",
        "--by",
        d["admin"],
    ],
}


def _acting_commands() -> set[str]:
    parser = argparse.ArgumentParser()
    add_subcommands(parser)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name
        for name, command in sub.choices.items()
        if {"--user", "--by"} & {o for a in command._actions for o in a.option_strings}
    }


def test_every_command_that_acts_as_a_user_has_a_cross_team_probe():
    assert _acting_commands() == set(CROSS_TEAM_COMMANDS)


def _run_probes(tmp_path, team: str) -> dict[str, tuple[int, int | None]]:
    """Each command's exit code and JSON status, run by the members `<role>-<team>`."""
    given = {
        "doc": write(tmp_path, factories.document()),
        "states": write(tmp_path, [{"name": "x", "state": 1}], "states.json"),
        "records": write(tmp_path, "", "records.jevl"),
        **{role: f"{role}-{team}" for role in (AU, R, AD)},
    }
    found = {}
    for name, args in CROSS_TEAM_COMMANDS.items():
        code, out, _ = run_cli(*args(given), "--json")
        found[name] = (code, json.loads(out).get("status") if out.strip().startswith("{") else None)
    return found


def test_the_cross_team_probes_pass_for_the_teams_own_members(tmp_path):
    """The control: run by members of the set's own team, no command answers 404 — so the
    other team's 404s come from the team, not from the probe."""
    make_world()
    suggestion_world(
        *get_user_model().objects.filter(username__in=("writer", "checker")).order_by("-username")
    )
    other = make_other_team()
    for role in (AU, R, AD):
        factories.user(f"{role}-default", role=role)
    # moving a set takes an admin of both teams
    services.member_set(
        team=other["team"], username="admin-default", role="admin", user=roles.OPERATOR
    )
    found = _run_probes(tmp_path, "default")
    assert {name for name, (_, status) in found.items() if status == 404} == set()


def test_a_member_of_another_team_gets_404_from_every_command(tmp_path, capsys):
    make_world()
    suggestion_world(
        *get_user_model().objects.filter(username__in=("writer", "checker")).order_by("-username")
    )
    make_other_team()
    before = (Version.objects.count(), QuestionSet.objects.get(slug="s").team_id)
    refused = _run_probes(tmp_path, "elsewhere")
    with capsys.disabled():
        wrong = {k: v for k, v in refused.items() if v != (1, 404)}
        print(f"\ncross-team commands: {len(wrong)} leaks of {len(refused)} probes")
    assert refused == {name: (1, 404) for name in CROSS_TEAM_COMMANDS}
    assert (Version.objects.count(), QuestionSet.objects.get(slug="s").team_id) == before
