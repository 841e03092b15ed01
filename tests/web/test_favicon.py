"""Every page has an icon: no 404 for /favicon.ico on each page load."""

from django.contrib.staticfiles import finders
from django.test import Client


def test_pages_link_the_icon_and_favicon_ico_leads_to_it(owner_session):
    page = owner_session.get("/").content.decode()
    answer = Client().get("/favicon.ico")

    assert '<link rel="icon" href="/static/agentdesk/favicon.svg"' in page
    assert answer.status_code == 301 and answer["Location"] == "/static/agentdesk/favicon.svg"
    assert finders.find("agentdesk/favicon.svg")
