"""A run's rows and rules: the lease (`lease`), the fenced writer (`writer`), how a run ends or
skips a step and where its files live (`lifecycle`), the kinds of run as recipes and the one
table that maps each kind to its recipe (`recipes`), the task's recipe (`task_recipe`), what a
run must show before it may succeed (`evidence`), what people ask of runs (`services`:
submit, cancel, restart), the kill switch and crash recovery (`control`), reads scoped to
their owner (`selectors`), a person's list of runs searched, filtered and sorted
(`listing`), every JSON shape of a run (`presenters`), two runs compared (`diff`) and its
workspace's files as its owner sees them: listed, previewed and opened under names that are
always text (`files`), and zipped as a stream (`files_zip`)."""
