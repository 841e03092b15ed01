"""Outgoing webhooks: registering, notifying, signing and delivering (`services`), and
reads scoped to the owner (`selectors`)."""
