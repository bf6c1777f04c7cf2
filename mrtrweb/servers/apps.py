from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "mrtrweb.servers"
    label = "servers"
    verbose_name = "MCP servers"
