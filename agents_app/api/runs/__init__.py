"""Runs (agents_app.runs) over the API: the shapes (`schemas`), the REST routes for tasks and
runs, their events and the health check (`rest`), and the MCP tools that submit and follow
runs (`mcp`)."""
