"""Shared fixtures, the hypothesis profile, and the rule that nothing is skipped silently in CI.

With CI set, a skipped test fails the run, except the PostgreSQL-only tests while the suite runs
on SQLite (CI runs the suite again on PostgreSQL, where they run and nothing may skip).
"""

import os

import pytest
from hypothesis import settings

POSTGRES_ONLY = "needs PostgreSQL"

# Nothing in the suite depends on speed: no property test fails because a loaded machine (CI
# runs two suites side by side on two cores) ran an example slowly. Example counts stay each
# test's own; a test's own @settings inherits this profile's deadline.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


#: the fixtures through which a test reaches the test database (pytest-django's; every other
#: database fixture requests `django_db_setup`, and a fixture's closure is in `fixturenames`)
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "live_server", "django_db_setup"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test is a slow one: `make test-fast` (`-m "not slow"`) leaves them out.

    A test with no `django_db` mark and no database fixture is `pure`: pytest-django refuses it
    the test database, and what it starts itself (a `manage.py`, `make serve`) names its own
    SQLite file, so it runs the same whatever `DATABASE_URL` says. CI runs the pure tests on
    the SQLite pass only (`.ci/run`), and every other test on PostgreSQL (the `both_databases`
    ones on SQLite too, the `one_database` sweeps on SQLite instead): so each test is in one
    pass at least."""
    for item in items:
        if item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.slow)
            continue
        uses = DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("django_db") is None and not uses:
            item.add_marker(pytest.mark.pure)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test databases, made by the migrations; then `post_migrate` stops
    filling the content types and permissions after each transactional test's flush. The
    flush keeps those two tables (tests/db_backends), so the signal's two receivers only read
    every app's rows again: about 70 ms of CPU a transactional test, for nothing."""
    from django.contrib.auth.management import create_permissions
    from django.contrib.contenttypes.management import create_contenttypes
    from django.db.models.signals import post_migrate

    post_migrate.disconnect(
        create_permissions, dispatch_uid="django.contrib.auth.management.create_permissions"
    )
    post_migrate.disconnect(create_contenttypes)
    yield


@pytest.fixture(autouse=True)
def _export_fetches_forgotten():
    """The export fetch log counts in process memory (`questions/services/fetches.py`): each
    test starts and ends with nothing counted, so no count of a test's rolled-back rows (a
    token, a set that is gone) is written in the next test, nor at exit into whatever database
    the settings name then."""
    from questions import services

    services.export_fetches_forget()
    yield
    services.export_fetches_forget()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    on_postgres = os.environ.get("DATABASE_URL", "").startswith("postgres")
    refused = []
    for report in reporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        if on_postgres or not reason.startswith(f"Skipped: {POSTGRES_ONLY}"):
            refused.append(f"{report.nodeid}: {reason}")
    if refused:
        reporter.write_line("CI forbids skipped tests:", red=True)
        for line in refused:
            reporter.write_line(f"  {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def world():
    """A set with v1 approved under `production`, v2 in review and v3 an open draft."""
    from tests.helpers import make_world

    return make_world()


@pytest.fixture
def provider_factory(settings):
    """Starts loopback providers and aims the console at them; each is stopped when the test
    ends. `provider_factory(server, every_wire=False, key=KEY, **overrides)` takes a started
    `Provider`, `FlakyProvider` or `StandIn` (tests/providers.py) and returns it: the typesafe
    wire gets its URL and `key` (with `every_wire`, `point_every_wire_at` aims typesafe, runtime
    and openrouter with the test key), and each keyword left is a setting to override
    (`DECISIONS_BATCH_BACKOFF_SECONDS=0.01`)."""
    from tests.providers import KEY, point_every_wire_at

    started = []

    def start(server, *, every_wire: bool = False, key: str = KEY, **overrides):
        started.append(server)
        if every_wire:
            point_every_wire_at(settings, server)
        else:
            settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = key, server.url
        for name, value in overrides.items():
            setattr(settings, name, value)
        return server

    yield start
    for server in started:
        server.stop()
