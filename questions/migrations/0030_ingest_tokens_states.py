"""Scoped API tokens, a set's ingest settings and daily counts, and what a sample state knows of
where it came from: its source, production's answers, version, label and time, and the hash of
its content (indexed, for the deduplication of production states). The hash of every existing
state is filled in last, after the schema changes: on PostgreSQL no index may be made in the
transaction after it updated the table."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import questions.models.ingest


def fill_hashes(apps, schema_editor):
    """Every existing state's content hash, as `spec.state_sha256` makes it."""
    from questions.core import spec

    sample_state = apps.get_model("questions", "SampleState")
    ids = list(sample_state.objects.filter(state_sha256="").values_list("pk", flat=True))
    for start in range(0, len(ids), 1000):  # read in chunks, no cursor open across the writes
        chunk = list(
            sample_state.objects.filter(pk__in=ids[start : start + 1000]).only("state_text")
        )
        for state in chunk:
            state.state_sha256 = spec.state_sha256(spec.loads(state.state_text))
        sample_state.objects.bulk_update(chunk, ["state_sha256"])


class Migration(migrations.Migration):
    dependencies = [
        ("questions", "0029_prove_holdout_share"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="IngestDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField()),
                ("received", models.PositiveIntegerField(default=0)),
            ],
            options={
                "ordering": ["-day"],
            },
        ),
        migrations.CreateModel(
            name="IngestSettings",
            fields=[
                (
                    "question_set",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="ingest_settings",
                        serialize=False,
                        to="questions.questionset",
                    ),
                ),
                ("keep_one_in", models.PositiveIntegerField(default=1)),
                ("retention_days", models.PositiveIntegerField(default=30)),
                ("daily_quota", models.PositiveIntegerField(blank=True, null=True)),
                ("drop_paths", models.JSONField(blank=True, default=list)),
                ("mask_patterns", models.JSONField(blank=True, default=list)),
                (
                    "builtins",
                    models.JSONField(blank=True, default=questions.models.ingest._builtins),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "verbose_name_plural": "ingest settings",
            },
        ),
        migrations.AddField(
            model_name="apitoken",
            name="question_sets",
            field=models.ManyToManyField(
                blank=True, related_name="api_tokens", to="questions.questionset"
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[
                    ("read", "read: fetch exports"),
                    ("ingest", "ingest: post production states"),
                ],
                default="read",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="observed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="production_answers",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="production_label",
            field=models.CharField(blank=True, max_length=36),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="production_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="source",
            field=models.CharField(
                choices=[("manual", "manual"), ("production", "production")],
                default="manual",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="samplestate",
            name="state_sha256",
            field=models.CharField(default="", editable=False, max_length=64),
        ),
        migrations.AlterField(
            model_name="samplestaterevision",
            name="author",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddIndex(
            model_name="samplestate",
            index=models.Index(fields=["question_set", "state_sha256"], name="state_content"),
        ),
        migrations.AddIndex(
            model_name="samplestate",
            index=models.Index(
                fields=["question_set", "source", "observed_at"], name="state_source"
            ),
        ),
        migrations.AddField(
            model_name="ingestday",
            name="question_set",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="ingest_days",
                to="questions.questionset",
            ),
        ),
        migrations.AddConstraint(
            model_name="ingestday",
            constraint=models.UniqueConstraint(
                fields=("question_set", "day"), name="ingest_day_unique"
            ),
        ),
        migrations.RunPython(fill_hashes, migrations.RunPython.noop),
    ]
