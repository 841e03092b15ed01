"""The pages' scripts and the sockets speak one vocabulary: every message type the scripts
handle is one streaming.messages.SocketMessage the server sends."""

import re
from pathlib import Path

from django.conf import settings

from agents_app.streaming.messages import SocketMessage

SCRIPTS = Path(settings.BASE_DIR) / "static" / "agentdesk"


def test_every_message_type_the_chat_script_handles_is_a_socket_message():
    script = (SCRIPTS / "chat.js").read_text()
    on_message = script[script.index("function onMessage") : script.index("function connect")]
    handled = set(re.findall(r'case "([a-z_]+)":', on_message))
    assert handled
    assert handled <= set(SocketMessage)


def test_the_notice_the_notifications_script_shows_is_a_socket_message():
    script = (SCRIPTS / "notifications.js").read_text()
    assert set(re.findall(r'notice\.type === "([a-z_]+)"', script)) == {
        SocketMessage.APPROVAL_WAITING
    }
