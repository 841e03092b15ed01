from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    verbose_name = "Agents"
