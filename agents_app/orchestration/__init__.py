"""Teams of agents (seed 001): the agent profiles a team run is made of, which everyone signed
in may read (`selectors`), their JSON shape (`presenters`), the tool names a profile may list
(`tools`) and each profile's run metrics (`metrics`: outcomes, completion time, tokens, error
rate, in SQL). The rows are `models.AgentProfile`, managed by staff in the admin. The head
node, its child runs and their messages come later, here too."""
