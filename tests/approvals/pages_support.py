"""Helpers for the approvals page tests: the decide endpoint and reading the approval dialog."""

from html import unescape

from tests.pages.support import elements

HTMX = {"HX-Request": "true"}


def decide_url(approval) -> str:
    return f"/approvals/{approval.pk}/decide/"


def dialog_buttons(html: str) -> list[str]:
    return [
        attrs["value"]
        for tag, attrs in elements(html)
        if tag == "button" and attrs.get("name") == "decision"
    ]


def textarea_text(html: str) -> str:
    start = html.index('name="arguments"')
    return unescape(html[html.index(">", start) + 1 : html.index("</textarea>", start)])
