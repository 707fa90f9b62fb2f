"""The suite's database backends (only the test settings name them): Django's own, with a
cheaper flush between transactional tests (the live servers', the workers', every browser
test's).

Both keep the tables that Django's `post_migrate` fills from the models alone — the content
types and the permissions, the same after every flush — out of the flush: emptied, they were
written again in full after every transactional test (about 80 ms of CPU a test); kept, the
signal need not run after a flush at all (tests/conftest.py's `django_db_setup`)."""

#: tables a flush leaves as they are: `post_migrate` would write the same rows into them again
KEPT = frozenset({"django_content_type", "auth_permission"})


def flushed(tables) -> list[str]:
    """The tables a flush empties: all it is given but those kept."""
    return [table for table in tables if table not in KEPT]
