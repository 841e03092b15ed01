"""Making a team's tree directly in the database: a head node with its plan of subtasks, each
started as a child by orchestration's own `spawn_child` (the child run, its task_assignment
message and the head node's child_started event), and children ended through `finish`, whose
hook hands the envelope back (task_result or error message, child_finished event). Ask for
the `queued_runs` fixture with them: starting a child queues it for a worker."""

from agents_app.models import AgentProfile, Run, RunKind, RunStatus, Step, Task
from agents_app.orchestration.children import spawn_child
from agents_app.runs.lifecycle import finish
from agents_app.runs.services import run_create
from agents_app.runs.writer import locked_run
from tests.support.runs import add_plan, to_status


def make_head(owner, text: str = "Research, implement and review a parser") -> Run:
    """A queued head node (kind team, the orchestrator's profile when one is seeded)."""
    return run_create(task=Task.objects.create(owner=owner, text=text, team=True))


def start_team(
    owner, subtasks: list[tuple[str, AgentProfile | None]], text: str = ""
) -> tuple[Run, list[Run]]:
    """A head node whose plan has `subtasks` (description, profile; None: a micro agent), each
    started as a child; the head node then waits for them. Returns (head, children)."""
    head = make_head(owner, text) if text else make_head(owner)
    plan = add_plan(head, [description for description, _ in subtasks])
    children = []
    with locked_run(head.pk) as w:
        for index, (description, profile) in enumerate(subtasks):
            step = Step.objects.get(plan=plan, index=index)
            children.append(
                spawn_child(
                    w,
                    step,
                    kind=RunKind.CHILD if profile else RunKind.MICRO,
                    text=description,
                    context={},
                    profile=profile,
                    persona="" if profile else "You check one thing.",
                )
            )
    to_status(head, RunStatus.WAITING_CHILDREN)
    return head, children


# From where a child stands to verifying, the last status before it succeeds.
TO_VERIFYING = {
    RunStatus.QUEUED: [RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING],
    RunStatus.PLANNING: [RunStatus.RUNNING, RunStatus.VERIFYING],
    RunStatus.RUNNING: [RunStatus.VERIFYING],
    RunStatus.VERIFYING: [],
}


def child_succeeds(child: Run, answer: str, *, prompt_tokens: int = 0) -> Run:
    """The child ends succeeded with `answer`, from wherever it stands (its envelope goes
    back to its parent)."""
    child.refresh_from_db()
    if prompt_tokens:
        Run.objects.filter(pk=child.pk).update(prompt_tokens=prompt_tokens)
    to_status(child, *TO_VERIFYING[child.status])
    with locked_run(child.pk) as w:
        w.set(final_response=answer)
        finish(w, RunStatus.SUCCEEDED)
    child.refresh_from_db()
    return child
