"""Agent profiles (agents_app.orchestration) over the API: the REST reads (`rest`)."""
