"""The items' copies of their states and the places of the runs finished before 0021: a
migration of its own, as on PostgreSQL no index (0021's, its foreign key's among them) may be
made in the transaction that updated the table ("pending trigger events")."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def fill_items(apps, schema_editor):
    """Every item's copy of its state (from its revision), in one UPDATE; and the place of each
    item of a run that finished before places were stored, worked out as a finishing run
    works it out (`services.summaries.store_places`)."""
    from questions.services.summaries import store_places

    batch_run = apps.get_model("questions", "BatchRun")
    batch_item = apps.get_model("questions", "BatchItem")
    revision = apps.get_model("questions", "SampleStateRevision")
    batch_item.objects.filter(state=None).update(
        state=Subquery(
            revision.objects.filter(pk=OuterRef("sample_state")).values("sample_state")[:1]
        )
    )
    for run in batch_run.objects.filter(status__in=["done", "cancelled", "failed"]).iterator():
        store_places(run, item_model=batch_item)


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0021_item_place_state"),
    ]

    operations = [migrations.RunPython(fill_items, migrations.RunPython.noop)]
