"""Conversations (agents_app.conversations) over the API: the shapes (`schemas`), the REST
routes under /api/v1/conversations (`rest`) and the MCP tools (`mcp`)."""
