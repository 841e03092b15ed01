"""The tools page: every registered tool, as the agents see it."""

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tools_app.registry import get_registry


@login_required(login_url="login")
@require_GET
def tool_list(request: HttpRequest) -> HttpResponse:
    tools = []
    for tool in get_registry().all():
        spec = tool.spec.as_dict()
        spec["schema_json"] = json.dumps(spec["schema"], indent=2, ensure_ascii=False)
        tools.append(spec)
    return render(request, "tools/tool_list.html", {"tools": tools, "nav": "tools"})
