"""Contract agents (seed 002): a contract a model works on autonomously, Start / Stop /
Restart. Each attempt is a Run (kind contract) of the one engine whose transcript is a
Conversation of the agent's; this package holds the attempt's recipe (`recipe`: its cycles
and their self-evaluation), their rules, status and log files."""
