"""What the model must answer in each phase, as pydantic models (their JSON schema goes to it)."""

from pydantic import BaseModel, ConfigDict, Field


class PlannedStep(BaseModel):
    model_config = ConfigDict(extra="ignore")

    objective: str = Field(min_length=1, description="What this step must achieve.")
    tool_names: list[str] = Field(
        default_factory=list,
        description="The tools this step must use; empty for pure reasoning.",
    )
    reasoning: str = Field(default="", description="Why this step is needed.")
    depends_on: list[int] = Field(
        default_factory=list, description="0-based indices of earlier steps this one needs."
    )


class PlanOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    steps: list[PlannedStep] = Field(min_length=1)
    parallel: bool = Field(
        default=False,
        description="True when each step's depends_on lists every step it needs: the steps "
        "that need nothing unfinished then run at the same time.",
    )


class VerificationOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    task_complete: bool
    reasoning: str = ""
    should_replan: bool = False
    response: str = Field(default="", description="The final answer for the user when complete.")
    evidence: list[int] = Field(
        default_factory=list,
        description="Numbers of the tool calls that show the task is done.",
    )
