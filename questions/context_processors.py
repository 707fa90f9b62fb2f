"""What every page shows: whether answers come from the local stand-in, and the navigation a
user may follow."""

from django.conf import settings

from questions import roles


def console(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "standin": settings.DECISIONS_STANDIN,
        "api_key_env": settings.DECISIONS_API_KEY_ENV,
        "can_manage_tokens": bool(user and user.is_authenticated and roles.may_manage_tokens(user)),
    }
