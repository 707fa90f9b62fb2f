"""The console project as an app: its admin site, and the admin pages it adds (console.admin)."""

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Console"


class ConsoleAdminConfig(AdminConfig):
    default_site = "console.sites.ConsoleAdminSite"
