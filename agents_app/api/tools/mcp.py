"""The MCP server's `list_tools`: the tools AgentDesk's agents can use, as tools_app's catalog
gives them to REST (GET /api/v1/tools). Importing this module registers it on
`api.mcp_server.server`."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, Field

from agents_app.api.mcp_server import READ_ONLY, caller, in_django, tool
from agents_app.api.schemas import Text
from tools_app.process_registry import get_registry
from tools_app.selectors import tool_catalog


class ToolServer(BaseModel):
    name: str
    status: str
    last_error: str = Field(description='Why the server is broken; staff only, "" for others.')


class AgentTool(BaseModel):
    # `schema` would shadow BaseModel.schema; the wire name stays REST's "schema".
    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    capabilities: list[str]
    domain: str
    input_schema: dict[str, Any] = Field(alias="schema")
    approval_level: str
    side_effects: str
    timeout: float
    source: str
    server: ToolServer | None = Field(
        default=None, description="For an MCP tool, its server and that server's status."
    )


class AgentToolList(BaseModel):
    tools: list[AgentTool]


@tool(annotations=READ_ONLY)
async def list_tools(
    ctx: Context,
    capability: Annotated[Text | None, Field(description="e.g. FILE_READ")] = None,
    domain: Annotated[Text | None, Field(description="e.g. file_operations")] = None,
) -> AgentToolList:
    """The tools AgentDesk's agents can use (not this server's own tools): builtin and from
    MCP servers, with their input schemas; optionally only those with a capability or in a
    domain."""

    def tools(user: Any) -> AgentToolList:
        found = tool_catalog(get_registry(), user=user, capability=capability, domain=domain)
        return AgentToolList.model_validate({"tools": found})

    return await in_django(tools, caller(ctx))
