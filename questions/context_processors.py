"""What every page shows: whether answers come from the local stand-in, and the navigation a
user may follow; and the facts forms restate for the browser (a run's defaults, what a label
name may be), from the code that owns them."""

from django.conf import settings

from questions import roles
from questions.dev import standin
from questions.models import BatchRun, Label, QuestionSet
from questions.services.errors import SLUG

RUN_DEFAULTS = {
    "concurrency": BatchRun.DEFAULT_CONCURRENCY,
    "max_concurrency": BatchRun.MAX_CONCURRENCY,
    "threshold": BatchRun.DEFAULT_THRESHOLD,
}
LABELS = {"pattern": Label.NAME_PATTERN, "suggested": Label.SUGGESTED, "baseline": Label.BASELINE}
SLUGS = {"pattern": SLUG.pattern, "max_length": QuestionSet._meta.get_field("slug").max_length}


def console(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "standin": settings.DECISIONS_STANDIN,
        "standin_how": standin.HOW_IT_ANSWERS,
        "api_key_env": settings.DECISIONS_API_KEY_ENV,
        "can_manage_tokens": bool(
            user and user.is_authenticated and roles.may_manage_tokens(user, None)
        ),
        "has_teams": bool(user and user.is_authenticated and roles.may_read(user, None)),
        "run_defaults": RUN_DEFAULTS,
        "sso_name": settings.OIDC_PROVIDER_NAME if settings.SOCIALACCOUNT_PROVIDERS else "",
        "local_passwords": settings.LOCAL_PASSWORDS,
        "label_rules": LABELS,
        "slug_rules": SLUGS,
    }
