"""URL configuration: the console's pages, sign-in and the admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("", include("questions.urls")),
]
