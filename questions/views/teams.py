"""Teams: the teams a user is a member of, a team's page (its members and their roles, its sets,
what it spent on provider calls today) and, for its admins, a member added, given another role
or taken out."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.models import Membership
from questions.post_forms import MemberForm, first_error
from questions.selectors import teams
from questions.services import budget


@require_GET
def team_list(request: HttpRequest) -> HttpResponse:
    """The teams the user reads, each with their role there."""
    found = list(teams.visible_teams(request.user))
    for team in found:
        team.role = roles.role_in(request.user, team)
    return render(request, "questions/team_list.html", {"teams": found})


@require_GET
def team_detail(request: HttpRequest, team: str) -> HttpResponse:
    """A team's members, sets and today's provider calls; its admins change the members."""
    found = get_object_or_404(teams.visible_teams(request.user), slug=team)
    context = {
        "team": found,
        "role": roles.role_in(request.user, found),
        "members": teams.members_of(found),
        "sets": found.question_sets.order_by("name").only("slug", "name"),
        "roles": Membership.Role.choices,
        "default_role": roles.VIEWER,
        "can_manage": roles.may_manage_team(request.user, found),
        "can_manage_tokens": roles.may_manage_tokens(request.user, found),
        "spend": budget.team_spend(found),
    }
    return render(request, "questions/team_detail.html", context)


@require_POST
def member_save(request: HttpRequest, team: str) -> HttpResponse:
    """Give a user a role in the team, or (`remove`) take them out; back to the team's page."""
    found = get_object_or_404(teams.visible_teams(request.user), slug=team)
    form = MemberForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing was changed: {first_error(form)}")
        return redirect(found)
    data = form.cleaned_data
    try:
        if data["remove"]:
            services.member_remove(team=found, username=data["username"], user=request.user)
            messages.success(request, f"{data['username']} is no member of {found.name} now.")
        else:
            member = services.member_set(
                team=found, username=data["username"], role=data["role"], user=request.user
            )
            messages.success(request, f"{data['username']} is {member.role} in {found.name}.")
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    return redirect(found)
