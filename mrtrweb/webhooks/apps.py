from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "mrtrweb.webhooks"
    label = "webhooks"
    verbose_name = "webhooks"
