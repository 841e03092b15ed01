"""Approvals (agents_app.approvals) over the API: the shapes (`schemas`), the REST routes
for approvals, rules and preferences (`rest`) and the MCP tools that list and decide (`mcp`)."""
