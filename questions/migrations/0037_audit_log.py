"""The audit log: one append-only row per state-changing action (who, when, what, the object,
from which address)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0036_call_holds"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("actor_name", models.CharField(max_length=150)),
                ("action", models.CharField(max_length=40)),
                ("object_type", models.CharField(blank=True, max_length=20)),
                ("object_id", models.CharField(blank=True, max_length=64)),
                ("object_repr", models.CharField(blank=True, max_length=200)),
                ("set_slug", models.CharField(blank=True, max_length=64)),
                ("detail", models.JSONField(blank=True, default=dict)),
                ("address", models.GenericIPAddressField(blank=True, null=True)),
                (
                    "via",
                    models.CharField(
                        choices=[
                            ("web", "the web"),
                            ("api", "the API"),
                            ("cli", "the command line"),
                            ("worker", "a task worker"),
                        ],
                        max_length=10,
                    ),
                ),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="audit_entries",
                        to="questions.team",
                    ),
                ),
            ],
            options={
                "ordering": ["-at", "-id"],
                "indexes": [
                    models.Index(fields=["team", "-at"], name="audit_team_at"),
                    models.Index(fields=["team", "action", "-at"], name="audit_team_action"),
                    models.Index(fields=["team", "set_slug", "-at"], name="audit_team_set"),
                ],
            },
        ),
    ]
