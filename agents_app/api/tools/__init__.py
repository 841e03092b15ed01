"""The agents' tools over the API: the MCP tool that lists them (`mcp`); their REST routes are
tools_app.api."""
