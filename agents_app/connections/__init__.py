"""LLM connections: the default one seeded from the LLM_* settings and the one a task runs on
(`services`), their health from staff's checks and the worker's real calls (`health`), the
enabled ones people pick from (`selectors`) and their JSON shape (`presenters`). The rows are
`models.LLMConnection`; the worker turns one into a provider (`worker.llm`)."""
