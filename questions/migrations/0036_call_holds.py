"""A team's provider calls held by work asking now outside a batch run (the daily budget), and
an index on when each call was made (a day's calls are counted by it)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0035_teams_required"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="CallHold",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("calls", models.PositiveIntegerField(help_text="calls still to ask")),
                ("what", models.CharField(max_length=40)),
                ("started_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddIndex(
            model_name="decision",
            index=models.Index(fields=["created_at"], name="decision_made_at"),
        ),
        migrations.AddField(
            model_name="callhold",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="call_holds",
                to="questions.team",
            ),
        ),
        migrations.AddIndex(
            model_name="callhold",
            index=models.Index(fields=["team", "started_at"], name="call_hold_day"),
        ),
    ]
