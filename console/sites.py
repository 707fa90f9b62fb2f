"""The admin site: staff as usual, and reviewers, who may unlock a locked-out sign-in there
(console.admin)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from questions import roles


class ConsoleAdminSite(admin.AdminSite):
    site_header = "Decision Console administration"

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return user.is_active and (user.is_staff or roles.may_review(user, None))
