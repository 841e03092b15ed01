"""Teams of agents (seed 001): the recipes of a team's runs (`recipes`: the head node, a
child, a micro agent), a head node's decisions (`head_node`: the split into subtasks, the
delegation, the envelopes put together), a run's children (`children`: spawn, envelope, hand
back, recovery, cancel), the agent profiles a team run is made of, which everyone signed in
may read (`selectors`), their JSON shape (`presenters`), the tool names a profile may list
(`tools`) and each profile's run metrics (`metrics`: outcomes, completion time, tokens, error
rate, in SQL). The rows are `models.AgentProfile`, managed by staff in the admin."""
