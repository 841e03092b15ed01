"""Login, logout, and every page behind the login."""

import pytest
from django.test import Client

from tests.support.runs import make_run


@pytest.mark.parametrize("path", ["/", "/tasks/new/", "/runs/1/", "/tools/"])
def test_a_page_sends_an_anonymous_visitor_to_the_login_page(db, path):
    response = Client().get(path)

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


def test_the_login_page_renders_a_form_with_the_csrf_token(db):
    html = Client().get("/login/").content.decode()

    assert 'id="login-form"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="username"' in html and 'name="password"' in html


def test_logging_in_lands_on_the_dashboard(owner):
    client = Client(enforce_csrf_checks=True)
    client.get("/login/")

    response = client.post(
        "/login/",
        {
            "username": "owner",
            "password": "owner-pass-123",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    )

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_logging_in_follows_next(owner):
    run = make_run(owner)

    response = Client().post(
        f"/login/?next=/runs/{run.pk}/",
        {"username": "owner", "password": "owner-pass-123", "next": f"/runs/{run.pk}/"},
    )

    assert response["Location"] == f"/runs/{run.pk}/"


def test_a_wrong_password_shows_an_error(owner):
    response = Client().post("/login/", {"username": "owner", "password": "nope"})

    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_logout_needs_a_post(owner_session):
    owner_client = owner_session
    assert owner_client.get("/logout/").status_code == 405

    response = owner_client.post("/logout/")

    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert owner_client.get("/").status_code == 302


def test_the_header_links_the_pages_and_a_logout_form(owner_session):
    html = owner_session.get("/").content.decode()

    for href in ['href="/"', 'href="/tasks/new/"', 'href="/tools/"']:
        assert href in html
    assert 'action="/logout/"' in html
    assert 'href="/admin/"' not in html


def test_staff_see_a_link_to_the_admin(owner, owner_session):
    owner_client = owner_session
    owner.is_staff = True
    owner.save()

    assert 'href="/admin/"' in owner_client.get("/").content.decode()


def test_pages_load_htmx_with_the_ws_extension_and_send_csrf_from_the_body(owner_session):
    html = owner_session.get("/").content.decode()

    assert "/static/django_htmx/htmx-2.min.js" in html
    assert "/static/django_htmx/ext/hx-ws-2.min.js" in html
    assert html.index("hx-ws-2.min.js") < html.index("/static/agentdesk/live.js")
    assert "/static/agentdesk/app.css" in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html
    assert "cdn." not in html
