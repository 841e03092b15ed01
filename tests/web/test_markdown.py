"""The `markdown` filter: a model's Markdown rendered, and nothing a model writes runs."""

import pytest
from django.template import Context, Template

from agents_app.web.markdown import markdown_html
from tests.support.markup import elements


def tags(html: str) -> set[str]:
    return {tag for tag, _ in elements(html)}


def test_a_script_tag_shows_as_text_and_never_runs():
    html = markdown_html("Done. <script>alert('x')</script>")

    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert tags(html) == {"p"}


def test_an_image_with_an_onerror_handler_is_not_an_element():
    html = markdown_html('<img src="x" onerror="alert(1)">')

    assert "img" not in tags(html)
    assert not any("onerror" in attrs for _, attrs in elements(html))


def test_a_javascript_link_is_not_a_link():
    html = markdown_html(
        "[click](javascript:alert(1)) [again](JaVaScRiPt:alert(1)) <javascript:alert(1)>"
    )

    assert "a" not in tags(html)
    assert not any("javascript:" in (attrs.get("href") or "") for _, attrs in elements(html))


@pytest.mark.parametrize(
    "raw",
    [
        '<a href="javascript:alert(1)">x</a>',
        '<div onclick="alert(1)">hi</div>',
        "<iframe src=https://evil.example></iframe>",
        "<style>body{display:none}</style>",
        '<svg onload="alert(1)"></svg>',
    ],
)
def test_raw_html_inside_markdown_stays_text(raw):
    html = markdown_html(f"# Report\n\n{raw}\n\n- item")

    assert tags(html) <= {"h1", "p", "ul", "li"}
    assert raw.replace("<", "&lt;").replace(">", "&gt;").split()[0] in html


def test_an_image_in_markdown_loads_nothing():
    html = markdown_html("![chart](https://tracker.example/pixel.png)")

    assert "img" not in tags(html)


def test_headings_lists_and_emphasis_become_their_elements():
    html = markdown_html("## Summary\n\n- **one**\n- *two*\n\n1. first\n2. second\n\n> quoted")

    assert tags(html) == {"h2", "ul", "li", "strong", "em", "ol", "blockquote", "p"}
    assert "<h2>Summary</h2>" in html


def test_a_table_becomes_a_table():
    html = markdown_html("| name | size |\n|---|---|\n| a.txt | 12 |\n")

    assert {"table", "thead", "tbody", "tr", "th", "td"} <= tags(html)
    assert "<td>a.txt</td>" in html


def test_fenced_code_is_escaped_inside_pre():
    html = markdown_html('```html\n<b onclick="x()">bold</b>\n```')

    assert html == '<pre><code>&lt;b onclick="x()"&gt;bold&lt;/b&gt;\n</code></pre>\n'


def test_a_web_link_opens_without_referrer_or_endorsement():
    html = markdown_html("See [the docs](https://docs.example/page).")

    links = [attrs for tag, attrs in elements(html) if tag == "a"]
    assert links == [{"href": "https://docs.example/page", "rel": "noopener noreferrer nofollow"}]


def test_the_template_filter_renders_markdown_and_marks_it_safe():
    template = Template("{% load markdown_text %}{{ text|markdown }}")

    html = template.render(Context({"text": "**bold** <em>raw</em>"}))

    assert html.strip() == "<p><strong>bold</strong> &lt;em&gt;raw&lt;/em&gt;</p>"


def test_empty_text_renders_nothing():
    assert markdown_html("") == ""
