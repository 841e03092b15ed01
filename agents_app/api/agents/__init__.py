"""Contract agents (agents_app.contracts) over the API: the shapes (`schemas`), the REST
routes under /api/v1/agents (`rest`) and the MCP tools (`mcp`)."""
