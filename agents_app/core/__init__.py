"""The kernel every package may use: the error family and its codes, `ErrorCode` (`errors`),
the event vocabulary, `EventType`, and publishing to the channel layer (`events`), queueing
Celery work by pinned task name (`dispatch`), the outbound-address guard (`netguard`), the
audit log (`audit`), API keys (`api_keys`: the lookup, and a person's own keys) and the
throttling of failed sign-ins and refused keys, counted in Redis (`throttle`), the sign-in
forms' throttled check (`sign_in`, for the site's and the admin's), and the one
redaction point every text from outside passes through (`secrecy`, plain Python). It imports
nothing of agents_app but the models."""
