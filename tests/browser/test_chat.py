"""The chat page in Chromium against daphne, real workers and the scripted LLM: two tabs
conversing at once (both answers stream into their tabs and complete, switching tabs stops
neither), and a chat tab on a laptop and a phone for the README."""

import re

import pytest
from django.db import transaction

from agents_app.conversations.services import conversation_create
from agents_app.models import Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.chat import add_rows
from tests.support.waiting import wait_for_run
from tests.support.worker import Worker
from tools_app.mcp.discovery import sync_builtin_tools
from tools_app.models import Tool
from tools_app.process_registry import get_registry
from tools_app.registry import ApprovalLevel

pytestmark = pytest.mark.integration

ALPHA = ["Lisbon in ", "three days: ", "Alfama, ", "Belém, ", "Sintra. ", "Alpha done."]
BRAVO = ["Pack light: ", "layers, ", "a rain jacket, ", "good shoes. ", "Bravo done."]
PHONE = {"width": 390, "height": 844}
TRIP = {"path": "trip.md", "content": "# Lisbon\n\nAlfama, Belém, Sintra.\n"}
# WCAG's contrast ratio of an element's text colour and its background, computed in the page.
CONTRAST_JS = """
element => {
  const channels = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = c => {
    const [r, g, b] = channels(c).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const style = getComputedStyle(element);
  const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}
"""


def new_chat(page) -> str:
    """+ Chat → Start: the new conversation's tab opens; returns its id."""
    before = page.url
    if not page.locator(".chat-new").evaluate("details => details.open"):
        page.click(".chat-new > summary")
    page.click(".chat-new-form button[type=submit]")
    page.wait_for_url(lambda url: re.search(r"/chat/\d+/$", url) and url != before)
    return re.search(r"/chat/(\d+)/$", page.url).group(1)


def send(page, conversation_id: str, text: str) -> None:
    box = page.locator(f"#chat-text-{conversation_id}")
    box.fill(text)
    box.press("Enter")
    expect(box).to_have_value("")  # the input came back empty: the message was taken


@pytest.mark.slow(
    reason="a second worker starts, and two answers stream at the same time, chunk by chunk 0.4 s apart"
)
def test_two_chat_tabs_converse_at_once_and_both_answers_stream_and_complete(page, stack, owner):
    stack.llm.script(
        [
            {
                "match": ["AGENTDESK:CHAT", "alpha"],
                "replies": [
                    {"reasoning": "Three days suit Lisbon.", "chunks": ALPHA, "chunk_delay": 0.4}
                ],
            },
            {
                "match": ["AGENTDESK:CHAT", "bravo"],
                "replies": [{"chunks": BRAVO, "chunk_delay": 0.4}],
            },
        ]
    )
    # A second worker: the two answers run at the same time, each on its own.
    second = Worker("browser-chat", stack.log_dir, **stack.env).start()
    try:
        log_in(page, "owner", PASSWORD)
        page.click("nav a:text('Chat')")
        page.wait_for_url("/chat/")
        alpha = new_chat(page)
        bravo = new_chat(page)
        expect(page.locator(".chat-tab")).to_have_count(2)
        expect(page.locator(f"#chat-panel-{bravo} .live-indicator")).to_have_attribute(
            "data-state", "live"
        )
        send(page, bravo, "bravo: what should I pack?")

        # Switching tabs loads the other tab in place; the first keeps its socket.
        page.click(f"#chat-tab-{alpha}")
        page.wait_for_url(f"/chat/{alpha}/")
        expect(page.locator(f"#chat-panel-{bravo}")).to_be_hidden()
        expect(page.locator(f"#chat-panel-{alpha} .live-indicator")).to_have_attribute(
            "data-state", "live"
        )
        send(page, alpha, "alpha: plan three days in Lisbon")

        # Alpha's answer streams into its tab as text before it is stored.
        alpha_panel = page.locator(f"#chat-panel-{alpha}")
        seen = page.wait_for_function(
            """([id, first]) => {
                const live = document.querySelector(`#chat-panel-${id} .chat-live`);
                const text = live && live.querySelector(".chat-streamed");
                return text && text.textContent.includes(first) ? text.textContent : false;
            }""",
            arg=[alpha, ALPHA[0].strip()],
            polling="raf",
            timeout=WAIT_MS,
        ).json_value()
        assert ALPHA[-1] not in seen, "the whole answer arrived at once, not streamed"

        expect(alpha_panel.locator(".chat-rows .chat-answer")).to_have_text("".join(ALPHA).strip())
        expect(alpha_panel.locator(".chat-live")).to_be_hidden()
        reasoning = alpha_panel.locator(".chat-rows .chat-reasoning")
        expect(reasoning).to_have_count(1)
        expect(reasoning).to_contain_text("Three days suit Lisbon.")
        expect(alpha_panel.locator(".chat-stop button")).to_be_disabled()

        # Bravo's answer went on while its tab was hidden.
        page.click(f"#chat-tab-{bravo}")
        bravo_panel = page.locator(f"#chat-panel-{bravo}")
        expect(bravo_panel).to_be_visible()
        expect(bravo_panel.locator(".chat-rows .chat-answer")).to_have_text("".join(BRAVO).strip())
        expect(page.locator(".chat-tab[data-running=true]")).to_have_count(0)
    finally:
        second.stop()

    first, other = Run.objects.filter(kind="chat").order_by("started_at")
    assert first.status == other.status == RunStatus.SUCCEEDED
    assert other.started_at < first.finished_at, "the answers ran one after the other"


@pytest.fixture
def trip(owner, stack, settings):
    """A conversation with a finished answer that called a tool, thought and answered in
    Markdown, and a second one: what the README shows."""
    settings.LLM_BASE_URL, settings.LLM_MODEL = stack.llm.base_url, "scripted"
    with transaction.atomic():
        other = conversation_create(owner=owner, interface="web", title="Packing list")
        chat = conversation_create(owner=owner, interface="web", title="Lisbon trip")
    # The rows as an answer leaves them (no worker: this picture needs the rows only).
    add_rows(chat, [("user", "Plan three days in Lisbon from my notes in lisbon.md", {})])
    arguments = {
        "path": "notes/lisbon.md",
        "offset": 0,
        "limit": 4000,
        "encoding": "utf-8",
        "strict": True,
    }
    add_rows(
        chat,
        [
            ("reasoning", "The notes are in lisbon.md; read them before planning.", {}),
            (
                "tool_call",
                "",
                {"call_id": "c1", "wire_name": "read_file", "arguments": arguments},
            ),
            (
                "tool_result",
                '{"content": "Must see: Alfama, Belém, Sintra. Budget: 300 EUR."}',
                {"call_id": "c1", "wire_name": "read_file", "ok": True},
            ),
            ("reasoning", "Three sights, three days: one a day, Sintra as a day trip.", {}),
            (
                "assistant",
                "## Three days in Lisbon\n\n1. **Alfama**: the castle and fado at night\n"
                "2. **Belém**: the tower and *pastéis de nata*\n3. **Sintra**: a day trip "
                "by train\n\nThat fits your budget of 300 EUR.",
                {},
            ),
        ],
    )
    return chat, other


def test_a_chat_tab_on_a_laptop_and_on_a_phone(page, stack, owner, trip, screenshot):
    chat, _ = trip
    log_in(page, "owner", PASSWORD)
    page.goto(f"/chat/{chat.pk}/")
    panel = page.locator(f"#chat-panel-{chat.pk}")
    expect(panel.locator(".live-indicator")).to_have_attribute("data-state", "live")
    call = panel.locator(".chat-call")
    expect(call.locator(".chat-call-short")).to_have_text(re.compile(r"^read_file\(.{80}…\)$"))
    call.locator("summary").click()
    expect(call.locator(".chat-result-text")).to_contain_text("Alfama, Belém, Sintra")
    expect(panel.locator(".chat-answer h2")).to_have_text("Three days in Lisbon")
    thought = panel.locator(".chat-rows .chat-reasoning").nth(1)
    thought.locator("summary").click()
    expect(thought.locator(".thought-text")).to_be_visible()
    screenshot(page, "chat.png")

    page.set_viewport_size(PHONE)
    page.reload()
    expect(panel.locator(".chat-answer h2")).to_be_visible()
    width = page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )
    assert width <= PHONE["width"]
    screenshot(page, "chat-phone.png")

    # Dark mode: a person's message and the answer stay readable.
    page.emulate_media(color_scheme="dark")
    for selector in (".chat-user", ".chat-answer"):
        element = panel.locator(f".chat-rows {selector}").first
        if selector == ".chat-answer":
            element = panel  # the answer's text is on the panel's background
        assert element.evaluate(CONTRAST_JS) >= 4.5, selector


@pytest.fixture
def write_file_asks():
    """write_file is auto-approved by default; staff made it `moderate` (their Tool row)."""
    sync_builtin_tools(get_registry())
    Tool.objects.filter(name="write_file").update(approval_level=ApprovalLevel.MODERATE)


def test_a_call_that_needs_approval_is_approved_in_the_chat_and_the_answer_completes(
    page, stack, owner, write_file_asks
):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {"tool_calls": [{"name": "write_file", "arguments": TRIP}]},
                    {"content": "Saved **trip.md**."},
                ],
            }
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/chat/")
    chat = new_chat(page)
    panel = page.locator(f"#chat-panel-{chat}")
    expect(panel.locator(".live-indicator")).to_have_attribute("data-state", "live")
    send(page, chat, "Save my Lisbon notes")

    card = panel.locator(".chat-approvals .chat-approval")
    expect(card).to_contain_text('write_file({"path": "trip.md"')
    card.locator("button[value=approve]").click()

    expect(panel.locator(".chat-rows .chat-answer")).to_have_text("Saved trip.md.")
    expect(panel.locator(".chat-rows .chat-answer strong")).to_have_text("trip.md")
    expect(panel.locator(".chat-approvals .chat-approval")).to_have_count(0)
    expect(panel.locator(".chat-rows .chat-call .chat-call-short")).to_contain_text("write_file(")
    # The answer streams in before the run's last commit ends it: wait for that.
    run = wait_for_run(Run.objects.get(kind="chat").pk, timeout=WAIT_MS / 1000)
    assert run.status == RunStatus.SUCCEEDED
    assert run.approvals.get().status == "approved"


def test_a_dropped_socket_is_told_in_the_tab_and_the_answer_arrives_once_it_is_back(
    page, stack, owner
):
    stack.llm.script(
        [{"match": "AGENTDESK:CHAT", "replies": [{"content": "Answered while you were away."}]}]
    )
    blocked = {"on": False}
    routes = []

    def socket(route):
        # While "blocked", every socket to a conversation is dropped at once, as by a network
        # that went away; otherwise it goes through to daphne.
        if blocked["on"]:
            route.close()
            return
        routes.append(route)
        route.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/conversations/\d+/"), socket)
    log_in(page, "owner", PASSWORD)
    page.goto("/chat/")
    chat = new_chat(page)
    panel = page.locator(f"#chat-panel-{chat}")
    expect(panel.locator(".live-indicator")).to_have_attribute("data-state", "live")
    expect(panel.locator(".chat-offline")).to_be_hidden()

    blocked["on"] = True
    for route in routes:  # Playwright's own objects: called in the browser's thread
        page._thread.call(route.close)
    expect(panel.locator(".chat-offline")).to_be_visible()
    expect(panel.locator(".chat-offline")).to_contain_text("Connection lost: reconnecting")
    # The message is sent over HTTP and answered on the server while the tab has no socket.
    send(page, chat, "are you there?")
    run = wait_for_run(Run.objects.get(conversation_id=chat).pk)
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.error_message)
    expect(panel.locator(".chat-offline")).to_be_visible()

    blocked["on"] = False
    expect(panel.locator(".chat-offline")).to_be_hidden(timeout=WAIT_MS)
    expect(panel.locator(".chat-rows")).to_contain_text("Answered while you were away.")
    expect(panel.locator(".chat-rows li", has_text="Answered while you were away.")).to_have_count(
        1
    )
