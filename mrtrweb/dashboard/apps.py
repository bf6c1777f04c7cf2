from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "mrtrweb.dashboard"
    label = "dashboard"
    verbose_name = "Admins' dashboard"
