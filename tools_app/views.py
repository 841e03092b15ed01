"""The tools page: every registered tool, as the agents see it."""

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tools_app.process_registry import get_registry
from tools_app.risk import least_level
from tools_app.selectors import tool_catalog


@login_required
@require_GET
def tool_list(request: HttpRequest) -> HttpResponse:
    tools = []
    for spec in tool_catalog(get_registry(), user=request.user):
        spec["schema_json"] = json.dumps(spec["schema"], indent=2, ensure_ascii=False)
        spec["effective_level"], spec["raised_by"] = least_level(
            approval_level=spec["approval_level"],
            side_effects=spec["side_effects"],
            schema=spec["schema"],
        )
        tools.append(spec)
    return render(request, "tools/tool_list.html", {"tools": tools, "nav": "tools"})
