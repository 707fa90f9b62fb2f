"""Freeze the model of each approved version (its export's `model`), and record the exact
request body of a decision. Versions approved before this migration get the model configured
now (DECISIONS__MODEL), which is what their export said until then."""

from django.conf import settings
from django.db import migrations, models


def fill_approved_model(apps, schema_editor):
    Version = apps.get_model("questions", "Version")
    Version.objects.filter(status="approved", approved_model="").update(
        approved_model=settings.DECISIONS_MODEL
    )


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0005_batch_runs"),
    ]

    operations = [
        migrations.AddField(
            model_name="version",
            name="approved_model",
            field=models.CharField(
                blank=True,
                help_text="DECISIONS__MODEL when approved; its export's model",
                max_length=200,
            ),
        ),
        migrations.RunPython(fill_approved_model, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="decision",
            name="request_text",
            field=models.TextField(help_text="the exact request body sent (never the key)"),
        ),
    ]
