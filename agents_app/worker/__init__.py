"""What a Celery worker does with a run: the executor loop that claims, decides, performs and
commits (`execution`), the verdicts that end a run's verifying (`verdicts`), how its steps are
written and seen (`steps`), a head node's decisions (`team`), the engine's window on the
database (`hooks`), the configured LLM (`llm`) and the periodic sweeps every worker runs
(`sweeps`)."""
