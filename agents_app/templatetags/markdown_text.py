"""`{{ text|markdown }}`: a model's Markdown as safe HTML (agents_app.web.markdown)."""

from django import template
from django.utils.safestring import SafeString

from agents_app.web.markdown import markdown_html

register = template.Library()


@register.filter(is_safe=True)
def markdown(text: str | None) -> SafeString:
    return markdown_html(str(text or ""))
