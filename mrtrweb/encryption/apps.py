from django.apps import AppConfig


class EncryptionConfig(AppConfig):
    name = "mrtrweb.encryption"
    label = "encryption"
    verbose_name = "Secrets at rest"
