"""What a person sees when something goes wrong: styled pages, never Django's debug page, and a
stale form's refusal said in words (as a fragment when htmx sent it)."""

import pytest
from django.test import Client


@pytest.mark.urls("tests.web.crashing_urls")
def test_a_server_error_shows_the_styled_page_and_nothing_of_the_code(owner_session):
    owner_session.raise_request_exception = False
    response = owner_session.get("/crash/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong" in page
    assert 'class="site-header"' in page
    assert "RuntimeError" not in page and "SECRET_KEY" not in page and "Traceback" not in page


def test_an_unknown_page_is_the_styled_404(owner_session):
    response = owner_session.get("/no/such/page/")
    assert response.status_code == 404
    assert "Not found" in response.content.decode()
    assert 'class="site-header"' in response.content.decode()


def test_a_form_without_a_valid_csrf_token_is_refused_with_a_page_that_says_why(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/tasks/new/", {"task": "Summarise the notes"})
    assert response.status_code == 403
    page = response.content.decode()
    assert "This form has expired. Reload the page and send it again." in page
    assert 'class="site-header"' in page


def test_an_htmx_form_without_a_valid_csrf_token_gets_a_fragment_to_show_in_place(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/tasks/new/", {"task": "Summarise"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    fragment = response.content.decode()
    assert 'class="error-box"' in fragment and "This form has expired" in fragment
    assert "<html" not in fragment
