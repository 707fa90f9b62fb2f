"""The admin pages the console adds: reviewers unlock a locked-out sign-in here.

A reviewer who is not staff sees only what a model admin grants reviewers by name (the
sign-in lockouts below); every other model admin still asks for Django's model permissions.
"""

from __future__ import annotations

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin
from django.http import HttpRequest

from questions import roles


class SignInLockoutAdmin(AccessAttemptAdmin):
    """Failed sign-ins; deleting a row unlocks that user name and address at once."""

    def _reviewer(self, request: HttpRequest) -> bool:
        return roles.may_review(request.user, None)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._reviewer(request) or super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._reviewer(request) or super().has_view_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return self._reviewer(request) or super().has_delete_permission(request, obj)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, SignInLockoutAdmin)
