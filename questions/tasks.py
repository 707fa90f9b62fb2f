"""Background work through Django's tasks API (django-tasks, database backend): many worker
processes and machines can share one queue (`manage.py db_worker`)."""

from django_tasks import task


@task()
def batch_run_task(run_id: int) -> None:
    from questions.batches import batch_execute

    batch_execute(run_id)
