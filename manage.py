#!/usr/bin/env python
"""Django's command-line utility for the Decision Console."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018  (the settings are read now, before any command)
    except ImproperlyConfigured as exc:
        # a variable missing or wrong (DJANGO_SECRET_KEY outside `make run`): one line that
        # names it, not a traceback
        sys.stderr.write(f"manage.py: {exc}\n")
        sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
