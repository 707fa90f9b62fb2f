"""What an error report (the DEBUG error page, an error e-mail) may show.

Django's filter hides settings and request headers whose *names* look secret. A frame's local
variables are shown as they are, and a value such as a `Wire` (it holds the key) or the request
headers (`Authorization: Bearer <key>`) has an innocent name. This filter also hides every value
that holds one of the console's secrets, in any of the forms `scrub` knows, and every local named
like a secret or the headers.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.template.defaultfilters import pprint
from django.views.debug import SafeExceptionReporterFilter

from questions.engine.backends.base import scrub

SECRET_SETTINGS = ("SECRET_KEY", "TYPESAFE_API_KEY", "RUNTIME_TOKEN", "OPENROUTER_API_KEY")
SECRET_LOCALS = re.compile(r"secret|authori[sz]ation|headers|password|token|api_?key", re.I)


def configured_secrets() -> tuple[str, ...]:
    """Every secret the console holds: the keys, the secret key, the database passwords."""
    found = [getattr(settings, name, "") for name in (*SECRET_SETTINGS, "LLM_API_KEY")]
    found.extend(getattr(settings, "SECRET_KEY_FALLBACKS", []))
    found.extend(db.get("PASSWORD", "") for db in settings.DATABASES.values())
    return tuple(s for s in found if isinstance(s, str) and s)


class SecretsFilter(SafeExceptionReporterFilter):
    """Also hides values that hold a secret, and locals named like one."""

    def holds_secret(self, value: Any) -> bool:
        try:
            text = value if isinstance(value, str) else pprint(value)
        except Exception:  # what cannot be looked at is not shown
            return True
        return scrub(text, *configured_secrets()) != text

    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str) and self.holds_secret(cleansed):
            return self.cleansed_substitute
        return cleansed

    def get_traceback_frame_variables(self, request, tb_frame):
        return [
            (
                name,
                self.cleansed_substitute
                if SECRET_LOCALS.search(name) or self.holds_secret(value)
                else value,
            )
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]
