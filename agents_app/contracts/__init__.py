"""Contract agents (seed 002): a contract a model works on autonomously, Start / Stop /
Restart. Each attempt is a Run (kind contract) of the one engine whose transcript is a
Conversation of the agent's; this package holds their rules, status and log files."""
