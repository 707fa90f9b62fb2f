"""The two groups the console's permissions read: authors write, reviewers review."""

from django.db import migrations

GROUPS = ("authors", "reviewers")


def create_groups(apps, schema_editor):
    group = apps.get_model("auth", "Group")
    for name in GROUPS:
        group.objects.get_or_create(name=name)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(create_groups, remove_groups)]
