"""The demo as a newcomer meets it: `go` started with no LLM configured (as the README's two
commands leave it) serves the scripted demo, and Chromium drives its features through the pages:
a chat whose fetch waits for an approval, a contract agent to Completed, a team whose head node
gives distinct subtasks to two profiles and a micro agent. Every page says it is the demo. The
pictures are the README's (AGENTDESK_UPDATE_SCREENSHOTS=1)."""

import os
import re
import signal
from collections.abc import Iterator

import pytest

from tests.browser.conftest import VIEWPORT
from tests.support.browser import WAIT_MS, expect
from tests.support.go import ADMIN_PASSWORD, START_TIMEOUT, STOP_TIMEOUT, RunningGo, go_environment
from tests.support.site import PAGE, page_served

pytestmark = [
    pytest.mark.integration,
    # Whichever runs first starts `go` for the module (one test process runs them all:
    # tests/conftest.py groups the tests of `demo_go`).
    pytest.mark.slow(reason="starts `go` (migrations, Valkey, daphne, a worker, the demo model)"),
    # `go` runs its own embedded stack whatever DATABASE_URL says: once is enough.
    pytest.mark.skipif(
        bool(os.environ.get("DATABASE_URL")),
        reason="`go` starts its own embedded stack: run in the embedded-defaults pass",
    ),
]

CONTRACT = "Write the list of files in the workspace to status.md"
TEAM_TASK = "Write a short report on what is in the workspace"


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with page_served() as url:
        yield url


@pytest.fixture(scope="module")
def demo_go(tmp_path_factory) -> Iterator[str]:
    """`uv run go` with no LLM: its URL once it is up."""
    directory = tmp_path_factory.mktemp("demo-go")
    env = go_environment(
        directory,
        # Empty rather than unset, so nothing in a .env is picked up: no model is configured.
        LLM_BASE_URL="",
        LLM_MODEL="",
        LOCAL_MODEL="",
        AGENT_LOG_DIR=str(directory / "agent-logs"),
        # The page the chat fetches is on loopback.
        HTTP_TOOL_ALLOW_PRIVATE="true",
        # A team's three children and its head node at once.
        WORKER_CONCURRENCY="4",
    )
    go = RunningGo(env)
    try:
        go.wait_for_output("AgentDesk is running at", START_TIMEOUT)
        assert "no LLM is configured, so the scripted demo answers" in go.output, go.output
        yield f"http://127.0.0.1:{env['PORT']}"
        go.process.send_signal(signal.SIGTERM)
        go.process.wait(timeout=STOP_TIMEOUT)
    finally:
        go.kill()


@pytest.fixture
def demo_page(browser, demo_go):
    """A browser signed in as the `admin` `go` made, on the demo's `go`."""
    context = browser.new_context(base_url=demo_go, viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", ADMIN_PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{demo_go}/")
    expect(page.locator("#demo-banner")).to_contain_text("Scripted demo, not a model")
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_a_demo_chat_reasons_asks_to_fetch_and_answers_after_approval(demo_page, site, screenshot):
    page = demo_page
    page.goto("/chat/")
    if not page.locator(".chat-new").evaluate("details => details.open"):
        page.click(".chat-new > summary")
    page.click(".chat-new-form button[type=submit]")
    page.wait_for_url(re.compile(r"/chat/\d+/$"))
    chat = re.search(r"/chat/(\d+)/$", page.url).group(1)
    panel = page.locator(f"#chat-panel-{chat}")
    expect(panel.locator(".live-indicator")).to_have_attribute("data-state", "live")
    box = page.locator(f"#chat-text-{chat}")
    box.fill(f"Fetch {site}")
    box.press("Enter")

    card = panel.locator(".chat-approvals .chat-approval")
    expect(card).to_contain_text("http_get(")
    card.locator("button[value=approve]").click()

    answer = panel.locator(".chat-rows .chat-answer").last
    expect(answer).to_contain_text("What I did")
    expect(answer).to_contain_text(PAGE)
    expect(answer).to_contain_text("scripted demo, not a model")
    expect(answer.locator("strong").first).to_have_text("What I did")
    # The reasoning before the call and before the answer, each in its own row.
    expect(panel.locator(".chat-rows .chat-reasoning")).to_have_count(2)
    expect(panel.locator(".chat-rows .chat-reasoning").first).to_contain_text("http_get")
    screenshot(page, "demo-chat.png")


def test_a_demo_contract_agent_works_in_cycles_to_completed(demo_page, screenshot):
    page = demo_page
    page.goto("/chat/")
    page.click("a.agent-new")
    page.wait_for_url(re.compile(r"/chat/agents/new/$"))
    page.fill("#agent-contract-new", CONTRACT)
    page.click(".agent-form button[type=submit]")
    page.wait_for_url(re.compile(r"/chat/agents/\d+/$"))
    agent = re.search(r"/chat/agents/(\d+)/$", page.url).group(1)
    panel = page.locator(f"#agent-panel-{agent}")

    expect(panel.locator(".agent-status")).to_have_text("Completed")
    expect(panel.locator(".agent-note")).to_have_count(2)
    expect(panel.locator(".agent-note").first).to_contain_text("not met")
    expect(panel.locator(".agent-output .chat-call")).to_have_count(2)
    expect(panel.locator(".agent-reason")).to_contain_text("The contract is met")
    screenshot(page, "demo-agent.png")


def test_a_demo_team_gives_distinct_subtasks_to_two_profiles_and_a_micro_agent(
    demo_page, screenshot
):
    page = demo_page
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", TEAM_TASK)
    page.check("#id_team")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))

    expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
    nodes = page.locator("#team-tree .team-node")
    expect(nodes).to_have_count(4)
    expect(page.locator("#team-tree .team-node[data-status=succeeded]")).to_have_count(4)
    expect(page.locator("#team-tree .team-node[data-kind=child]")).to_have_count(2)
    expect(page.locator("#team-tree .team-node[data-kind=micro]")).to_have_count(1)
    children = page.locator("#team-tree .team-node[data-kind=child] .team-who").all_text_contents()
    assert len(set(children)) == 2, children
    subtasks = page.locator("#team-tree .team-node .team-subtask").all_text_contents()
    assert len(set(subtasks)) == len(subtasks), subtasks
    screenshot(page, "demo-team.png")
