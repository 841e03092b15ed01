"""Markdown a model wrote, as HTML a page may show: markdown-it-py renders it with raw HTML
turned off, then nh3 keeps only the tags Markdown itself produces. The sanitizer is the
guarantee; the renderer's own settings only make its output smaller and predictable."""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

# What Markdown (CommonMark plus tables and strikethrough) produces, images excepted: a model's
# image would load a URL it chose the moment the page opens.
ALLOWED_TAGS = frozenset(
    {
        *("h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr"),
        *("ul", "ol", "li", "blockquote", "pre", "code"),
        *("em", "strong", "s", "del", "a"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    }
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"

_renderer = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .disable("image")
)


def markdown_html(text: str) -> SafeString:
    """`text` rendered as Markdown and sanitized: raw HTML shows as text, links keep only
    http(s) and mailto targets and open without a referrer, code is escaped."""
    if not text:
        return mark_safe("")
    rendered = _renderer.render(text)
    return mark_safe(  # noqa: S308 - nh3 output: only ALLOWED_TAGS and ALLOWED_ATTRIBUTES
        nh3.clean(
            rendered,
            tags=set(ALLOWED_TAGS),
            clean_content_tags={"script", "style"},
            attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
            url_schemes=set(URL_SCHEMES),
            link_rel=LINK_REL,
            strip_comments=True,
        )
    )
