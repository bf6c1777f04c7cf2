from django.apps import AppConfig


class PoliciesConfig(AppConfig):
    name = "mrtrweb.policies"
    label = "policies"
    verbose_name = "Approval policies"
    default_auto_field = "django.db.models.BigAutoField"
