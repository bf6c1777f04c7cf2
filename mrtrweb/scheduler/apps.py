from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "mrtrweb.scheduler"
    label = "scheduler"
    verbose_name = "Scheduler"
