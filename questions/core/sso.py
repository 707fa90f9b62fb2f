"""Single sign-on's rules, pure: the setting that maps the identity provider's groups to roles
in teams (`OIDC_GROUP_ROLES`), and the roles a user's groups give: in each team, the role that
holds every right their groups there give (an author's and a reviewer's together are an
admin's)."""

from __future__ import annotations

import re

#: a role's rights, from least to most; author and reviewer hold different ones
ORDER = {"viewer": 0, "author": 1, "reviewer": 1, "admin": 2}

_SLUG = re.compile(r"[a-z0-9_\-]+")


def parse_group_roles(text: str) -> dict[str, list[tuple[str, str]]]:
    """`group=team:role, …` (a group may be named again for more teams) as group → [(team,
    role)]; `ValueError` naming the entry that does not read."""
    found: dict[str, list[tuple[str, str]]] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        group, _, target = entry.rpartition("=")
        team, _, role = target.partition(":")
        group, team, role = group.strip(), team.strip(), role.strip()
        if not group or not _SLUG.fullmatch(team) or role not in ORDER:
            raise ValueError(f"{entry[:60]!r} is not group=team:role (role: {', '.join(ORDER)})")
        found.setdefault(group, []).append((team, role))
    return found


def _joined(a: str, b: str) -> str:
    if a == b:
        return a
    if ORDER[a] == ORDER[b]:  # an author's and a reviewer's rights together
        return "admin"
    return a if ORDER[a] > ORDER[b] else b


def roles_for(groups: list[str], mapping: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """Team → role that `groups` (the identity provider's group claim) give by `mapping`."""
    wanted: dict[str, str] = {}
    for group in groups:
        for team, role in mapping.get(group, ()):
            wanted[team] = _joined(wanted[team], role) if team in wanted else role
    return wanted


def managed_teams(mapping: dict[str, list[tuple[str, str]]]) -> set[str]:
    """The teams whose members the identity provider decides (those the mapping names)."""
    return {team for pairs in mapping.values() for team, _ in pairs}
