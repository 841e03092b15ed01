"""Teams (agents_app.orchestration) over the API: a run's tree and messages (`rest`)."""
