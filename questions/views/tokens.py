"""The application's API tokens, per team: its admins and reviewers create (of a scope, for the
team's sets named, perhaps until a day), see and revoke them."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import Case, Prefetch, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from questions import roles, services
from questions.core.numbers import whole_number
from questions.models import APIToken, Label, QuestionSet, Team
from questions.services.errors import storable
from questions.services.tokens import READ, TOKEN_MANAGERS_ONLY


@never_cache  # a new token is on this page once: no cache, shared or private, may keep it
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """A team's admins and reviewers create, see and revoke its tokens (`?team=`: which of
    their teams; the first by default); a new token is shown once."""
    teams = roles.teams_where(request.user, roles.may_manage_tokens)
    if not teams:
        raise services.NotAllowed(TOKEN_MANAGERS_ONLY)
    slug = request.GET.get("set", "")
    chosen = request.POST.get("team") or request.GET.get("team", "")
    try:
        storable(slug, "?set")
        storable(chosen, "?team")
    except services.Invalid as exc:  # no database looks a NUL up; nothing is done
        return _token_page(request, teams[0], teams, "", problem=str(exc), status=400)
    team = next((t for t in teams if t.slug == chosen), None) if chosen else teams[0]
    if team is None:
        raise Http404("No such team.")
    if request.method == "POST" and request.POST.get("revoke"):
        return _token_revoke(request, team, request.POST["revoke"])
    if request.method == "POST":
        return _token_create(request, team, teams, slug)
    return _token_page(request, team, teams, slug)


def _token_revoke(request: HttpRequest, team: Team, raw: str) -> HttpResponse:
    pk = whole_number(raw)
    if pk is None:
        raise Http404("No such token.")
    token = get_object_or_404(APIToken, pk=pk, team=team)
    services.api_token_revoke(token=token, user=request.user)
    messages.success(request, f"Revoked {token.name}.")
    return redirect(f"{reverse('token-list')}?{urlencode({'team': team.slug})}")


def _token_create(request: HttpRequest, team: Team, teams: list[Team], slug: str) -> HttpResponse:
    if request.POST.get("once") != request.session.pop(TOKEN_FORM, None):
        # a reload (or a second tab) sends the create form again: it makes no second token
        problem = (
            "This form was sent already, so no second token was made (the first was shown "
            "once). To make another, fill in the form below."
        )
        return _token_page(request, team, teams, slug, problem=problem, status=409)
    days = whole_number(request.POST.get("expires", ""), digits=4)
    try:
        token, created = services.api_token_create(
            name=request.POST.get("name", ""),
            user=request.user,
            scope=request.POST.get("scope", READ),
            sets=_slugs(request.POST.get("sets", "")),
            team=team,
            expires_in=timedelta(days=days) if days else None,
        )
    except services.ServiceError as exc:
        return _token_page(request, team, teams, slug, problem=str(exc), status=exc.status)
    return _token_page(request, team, teams, slug, created=created, created_token=token)


def _slugs(text: str) -> list[str]:
    """The set slugs a form field lists, separated by commas or spaces."""
    return [slug for slug in re.split(r"[\s,]+", text) if slug]


def _token_page(
    request: HttpRequest,
    team: Team,
    teams: list[Team],
    slug: str,
    *,
    created: str | None = None,
    created_token: APIToken | None = None,
    problem: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The page, with a fresh one-time value for its create form (`TOKEN_FORM`)."""
    request.session[TOKEN_FORM] = once = secrets.token_urlsafe(16)
    return render(
        request,
        "questions/token_list.html",
        {
            "team": team,
            "teams": teams,
            "tokens": APIToken.objects.filter(team=team)
            .select_related("created_by")
            .prefetch_related(
                Prefetch("question_sets", QuestionSet.objects.only("slug").order_by("slug"))
            ),
            "expiries": EXPIRIES,
            "expires": request.POST.get("expires", "") if problem else "",
            "scopes": APIToken.Scope.choices,
            "scope": request.POST.get("scope", READ) if problem else READ,
            "sets": request.POST.get("sets", "") if problem else slug,
            "ingest_example": _ingest_example(request, team, slug, created_token),
            "created": created,
            "created_token": created_token,
            "problem": problem,
            "example": _export_example(request, team, slug, created_token),
            "once": once,
            "name": request.POST.get("name", "") if problem else "",
        },
        status=status,
    )


#: the session key of the create-token form's one-time value
TOKEN_FORM = "token_form"

#: what the create form offers for how long a token lasts, in days ("": until revoked)
EXPIRIES = (("", "never"), ("30", "30 days"), ("90", "90 days"), ("365", "a year"))


def _ingest_example(request: HttpRequest, team: Team, slug: str, token: APIToken | None) -> str:
    """The production states' URL of a set the new token names, else of the `?set=` given
    (when it is a set's), else with a placeholder slug."""
    named = token.question_sets.order_by("slug").first() if token is not None else None
    given = team.question_sets.filter(slug=slug).values_list("slug", flat=True).first()
    return request.build_absolute_uri(
        reverse("api-states", args=[named.slug if named else given or "SLUG"])
    )


def _export_example(
    request: HttpRequest, team: Team, slug: str, token: APIToken | None = None
) -> str | None:
    """The export URL of a label of the team's sets to fill into the page's curl: of a set the
    new token names when it names some (a read token reaches no other), else of the `?set=`
    given (its `production`, else its newest label), else the label moved last; None when no
    set has one."""
    labels = (
        Label.objects.filter(question_set__team=team)
        .select_related("question_set")
        .order_by("-updated_at")
    )
    named = list(token.question_sets.values_list("slug", flat=True)) if token is not None else []
    if named:
        labels = labels.filter(question_set__slug__in=named)
        slug = slug if slug in named else ""
    if slug:
        labels = labels.filter(question_set__slug=slug).order_by(
            Case(When(name=Label.BASELINE, then=0), default=1), "-updated_at"
        )
    label = labels.first()
    if label is None:
        return None
    url = reverse("api-export", args=[label.question_set.slug])
    return request.build_absolute_uri(f"{url}?{urlencode({'label': label.name})}")
