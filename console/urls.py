"""URL configuration: the console's pages, sign-in, the health check and the admin.

Sign-in has no password-reset pages: the console sends no mail, so a reset could never arrive.
"""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from console import health

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password_change/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    # single sign-on: /accounts/oidc/<provider>/login/ and its callback (console/sso.py)
    path("accounts/", include("allauth.socialaccount.providers.openid_connect.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("questions.urls")),
]

handler400 = "console.limits.bad_request"
