"""Paging: one shape for every list, over REST and MCP alike."""

from typing import Any


def page_of(items: Any, page: int, page_size: int, render: Any) -> dict[str, Any]:
    """One page of a query (1-based), as every list answers: count, page, page_size, results
    (each item through `render`)."""
    start = (page - 1) * page_size
    return {
        "count": items.count(),
        "page": page,
        "page_size": page_size,
        "results": [render(item) for item in items[start : start + page_size]],
    }
