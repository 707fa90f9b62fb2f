"""What every page shows: whether answers come from the local stand-in."""

from django.conf import settings


def console(request) -> dict:
    return {"standin": settings.DECISIONS_STANDIN, "api_key_env": settings.DECISIONS_API_KEY_ENV}
