"""What each answered item decides (`BatchItem.decided`) and the index "changes only" probes a
state's item in a run by; 0024 fills them for the runs before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0023_lint_acceptance"),
    ]

    operations = [
        migrations.AddField(
            model_name="batchitem",
            name="decided",
            field=models.CharField(
                blank=True, help_text="what its answers decide (a digest)", max_length=32, null=True
            ),
        ),
        migrations.AddIndex(
            model_name="batchitem",
            index=models.Index(
                fields=["run", "variant", "state", "status", "decided"], name="item_run_state"
            ),
        ),
    ]
