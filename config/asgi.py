import os
import threading

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_asgi_app = get_asgi_application()

# Imported after Django is set up: the consumers use models.
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agents_app.api.mcp_http import with_mcp  # noqa: E402
from agents_app.core import dispatch  # noqa: E402
from agents_app.streaming.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # /mcp is AgentDesk's own MCP server (agents_app/api/mcp_http.py); the rest is Django.
        "http": with_mcp(django_asgi_app),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)

# The first run a person submits must not wait for Celery to finalise and connect.
threading.Thread(target=dispatch.warm, name="warm-task-queue", daemon=True).start()
