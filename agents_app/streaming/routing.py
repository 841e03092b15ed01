from channels.auth import AuthMiddlewareStack
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from agents_app.streaming import consumers, conversations, notices, task_socket
from agents_app.streaming.ws_auth import ApiKeyAuthMiddleware


def for_pages(app):
    """Browser sockets ride on the session cookie, so their Origin must be this site."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(app))


websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", for_pages(consumers.RunPageConsumer.as_asgi())),
    path("ws/dashboard/", for_pages(consumers.DashboardConsumer.as_asgi())),
    path("ws/header/", for_pages(consumers.HeaderConsumer.as_asgi())),
    path("ws/notices/", for_pages(notices.NoticeConsumer.as_asgi())),
    path("ws/api/runs/<int:run_id>/", ApiKeyAuthMiddleware(consumers.RunApiConsumer.as_asgi())),
    path("ws/api/tasks/", ApiKeyAuthMiddleware(task_socket.TaskApiConsumer.as_asgi())),
    path(
        "ws/conversations/<int:conversation_id>/",
        for_pages(conversations.ConversationConsumer.as_asgi()),
    ),
    path(
        "ws/api/conversations/<int:conversation_id>/",
        ApiKeyAuthMiddleware(conversations.ConversationApiConsumer.as_asgi()),
    ),
]
