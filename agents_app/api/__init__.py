"""The REST API (django-ninja) and AgentDesk's own MCP server: the NinjaAPI with its
error handlers (`site`), the error envelope (`errors`), authentication (`auth`), request
and response schemas (`schemas`), paging (`pagination`), the routers (`runs`, `approvals`,
`webhooks`), the health check (`health`) and the MCP server at /mcp (`mcp_server`)."""
