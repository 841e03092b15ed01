"""Outgoing webhooks (agents_app.webhooks) over the API: the REST routes (`rest`)."""
