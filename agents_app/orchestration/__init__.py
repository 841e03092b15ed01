"""Teams of agents (seed 001): the agent profiles a team run is made of, which everyone signed
in may read (`selectors`), their JSON shape (`presenters`) and the tool names a profile may
list (`tools`). The rows are `models.AgentProfile`, managed by staff in the admin. The head
node, its child runs and their messages come later, here too."""
