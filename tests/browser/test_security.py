"""The pages, the admin and the API docs under the Content-Security-Policy, in a real browser
(the `page` fixture fails a test on any refusal it logs), and errors shown in place."""

import pytest

from tests.support.browser import PASSWORD, expect, log_in
from tests.support.runs import make_run

pytestmark = pytest.mark.integration


def test_every_page_sends_a_content_security_policy_that_forbids_inline_script(page, owner):
    response = page.goto("/login/")
    policy = response.header_value("content-security-policy")
    assert "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy


def test_the_pages_work_under_the_policy(page, owner):
    log_in(page, "owner", PASSWORD)
    run = make_run(owner)
    for path in ["/", "/tasks/new/", "/approvals/", "/settings/", "/tools/", f"/runs/{run.pk}/"]:
        page.goto(path)
        expect(page.locator("header.site-header")).to_be_visible()
    # htmx runs under the policy: the dashboard's live socket connects.
    page.goto("/")
    expect(page.locator(".servers-live")).to_be_attached()


def test_the_admin_and_its_transport_switch_work_under_the_policy(page, superuser):
    log_in_admin(page)
    page.goto("/admin/tools_app/mcpserver/add/")
    page.select_option("#id_transport", "stdio")
    expect(page.locator("fieldset.transport-stdio").first).to_be_visible()
    expect(page.locator("fieldset.transport-http").first).to_be_hidden()
    page.select_option("#id_transport", "streamable_http")
    expect(page.locator("fieldset.transport-http").first).to_be_visible()
    expect(page.locator("fieldset.transport-stdio").first).to_be_hidden()


def test_the_api_docs_render_under_the_policy(page, owner):
    page.goto("/api/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("AgentDesk")
    expect(page.locator(".opblock").first).to_be_visible()


def test_a_form_refused_for_its_csrf_token_says_so_in_place(page, owner):
    log_in(page, "owner", PASSWORD)
    run = make_run(owner)  # queued: it can be cancelled
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator("#cancel-run")).to_be_visible()
    # Another tab logged out and in again: this page's token is stale.
    page.evaluate(
        "document.body.setAttribute('hx-headers', JSON.stringify({'X-CSRFToken': 'stale'}))"
    )
    page.evaluate(
        "document.querySelectorAll('input[name=csrfmiddlewaretoken]')"
        ".forEach(input => { input.value = 'stale'; })"
    )
    page.click("#cancel-run")
    alert = page.locator("[data-request-error]")
    expect(alert).to_contain_text("This form has expired")
    # The page is still the run's page, not an error page in its place.
    expect(page.locator("#run-controls #cancel-run")).to_be_visible()
    assert page.url.endswith(f"/runs/{run.pk}/")


def log_in_admin(page):
    page.goto("/admin/login/")
    page.fill("#id_username", "staff")
    page.fill("#id_password", "staff-pass-123")
    page.click("input[type=submit]")
    page.wait_for_url("/admin/")
