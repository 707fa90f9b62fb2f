"""The default team: every existing set and API token belongs to it, and the groups the console
read before teams become the roles of their members in it, so an install of one team sees no
change:

    in `authors` and `reviewers`, or staff (who managed tokens)   admin
    in `reviewers`                                                reviewer
    in `authors`                                                  author
    any other user (every signed-in user read every set)          viewer

Superusers hold every role in every team and need no membership. The two groups are removed:
from now on the roles are read from the memberships only. Going back recreates the groups
from the default team's roles (an admin is put in both)."""

from django.conf import settings
from django.db import migrations

DEFAULT = "default"
AUTHORS, REVIEWERS = "authors", "reviewers"


def to_team(apps, schema_editor):
    team_model = apps.get_model("questions", "Team")
    membership = apps.get_model("questions", "Membership")
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    group = apps.get_model("auth", "Group")
    team, _ = team_model.objects.get_or_create(slug=DEFAULT, defaults={"name": "Default team"})
    apps.get_model("questions", "QuestionSet").objects.filter(team=None).update(team=team)
    apps.get_model("questions", "APIToken").objects.filter(team=None).update(team=team)
    authors = set(group.objects.filter(name=AUTHORS).values_list("user", flat=True))
    reviewers = set(group.objects.filter(name=REVIEWERS).values_list("user", flat=True))
    rows = []
    for pk, is_staff in user_model.objects.values_list("pk", "is_staff"):
        if is_staff or (pk in authors and pk in reviewers):
            role = "admin"
        elif pk in reviewers:
            role = "reviewer"
        elif pk in authors:
            role = "author"
        else:
            role = "viewer"
        rows.append(membership(team=team, user_id=pk, role=role))
    membership.objects.bulk_create(rows, ignore_conflicts=True)
    group.objects.filter(name__in=(AUTHORS, REVIEWERS)).delete()


def to_groups(apps, schema_editor):
    group = apps.get_model("auth", "Group")
    membership = apps.get_model("questions", "Membership")
    authors, _ = group.objects.get_or_create(name=AUTHORS)
    reviewers, _ = group.objects.get_or_create(name=REVIEWERS)
    for row in membership.objects.filter(team__slug=DEFAULT).select_related("user"):
        if row.role in ("author", "admin"):
            row.user.groups.add(authors)
        if row.role in ("reviewer", "admin"):
            row.user.groups.add(reviewers)


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0033_teams"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [migrations.RunPython(to_team, to_groups)]
