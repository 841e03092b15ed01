"""Reading the pages' HTML: every element with its attributes, the top-level ones, ids."""

from html.parser import HTMLParser


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.depth = 0
        self.top_level: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = (tag, dict(attrs))
        self.elements.append(element)
        if self.depth == 0:
            self.top_level.append(element)
        if tag not in {"br", "hr", "img", "input", "meta", "link"}:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        self.depth -= 1


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


def top_level(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.top_level


def ids(html: str) -> list[str]:
    return [attrs["id"] for _, attrs in elements(html) if attrs.get("id")]


def by_id(html: str, element_id: str) -> dict[str, str | None]:
    return next(attrs for _, attrs in elements(html) if attrs.get("id") == element_id)
