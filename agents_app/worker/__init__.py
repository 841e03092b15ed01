"""What a Celery worker does with a run: the executor loop that claims, decides, performs and
commits (`execution`: where the kinds of run differ, it asks the run's recipe, runs.recipes),
how its steps are written and seen (`steps`), the engine's window on the database (`hooks`),
the configured LLM (`llm`) and the periodic sweeps every worker runs (`sweeps`)."""
