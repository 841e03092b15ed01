"""The kernel every package may use: the error family and its codes, `ErrorCode` (`errors`),
the event vocabulary, `EventType`, and publishing to the channel layer (`events`), queueing
Celery work by pinned task name (`dispatch`), the outbound-address guard (`netguard`), the
audit log (`audit`) and API keys (`api_keys`: the lookup, and a person's own keys). It
imports nothing of agents_app but the models."""
