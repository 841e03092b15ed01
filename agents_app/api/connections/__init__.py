"""LLM connections (agents_app.connections) over the API: GET /api/v1/connections (`rest`)."""
