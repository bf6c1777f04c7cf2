from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "mrtrweb.inbox"
    label = "inbox"
    verbose_name = "Inbox"
