"""Every set and every API token belongs to a team (0034 gave the existing ones the default
team); in a migration of its own, so PostgreSQL alters the tables after the updates committed."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("questions", "0034_default_team")]

    operations = [
        migrations.AlterField(
            model_name="apitoken",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="api_tokens",
                to="questions.team",
            ),
        ),
        migrations.AlterField(
            model_name="questionset",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="question_sets",
                to="questions.team",
            ),
        ),
    ]
