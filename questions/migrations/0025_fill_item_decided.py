"""The runs from before 0023: their answered items' `decided` filled, and their test reports
stored again with the states that passed every check (the scorecard's overall reads them). A
migration of its own, as on PostgreSQL no index may be made in the transaction that updated
the table (see 0022)."""

from django.db import migrations


def fill_runs(apps, schema_editor):
    from questions.services.summaries import store_decided, store_reports

    batch_run = apps.get_model("questions", "BatchRun")
    batch_item = apps.get_model("questions", "BatchItem")
    run_report = apps.get_model("questions", "RunReport")
    for run in batch_run.objects.iterator():  # an unfinished run is compared too
        store_decided(run, item_model=batch_item)
    for run in batch_run.objects.filter(status__in=["done", "cancelled", "failed"]).iterator():
        store_reports(run, report_model=run_report)


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0024_item_decided"),
    ]

    operations = [migrations.RunPython(fill_runs, migrations.RunPython.noop)]
