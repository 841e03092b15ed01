"""GET /api/v1/profiles and /api/v1/profiles/{id}: the agent profiles staff set up (seed 001).
They are the site's shared configuration: anyone signed in reads every one."""

from datetime import datetime

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from agents_app.models import AgentRole
from agents_app.orchestration import selectors
from agents_app.orchestration.presenters import profile_payload

router = Router(tags=["profiles"])


class ProfileConnection(Schema):
    id: int
    name: str
    model: str = Field(description="The connection's own model.")


class Effective(Schema):
    connection: ProfileConnection | None = Field(
        description="The connection its runs use now; null: no LLM is configured."
    )
    model: str = Field(description="The model its runs ask for now.")


class Budgets(Schema):
    max_tokens: int | None = Field(description="Per run; null: RUN_MAX_TOKENS.")
    max_tool_calls: int | None = Field(description="Per run; null: RUN_MAX_TOOL_CALLS.")
    max_seconds: int | None = Field(description="Per run; null: AGENT_RUN_TIMEOUT.")


class ProfileOut(Schema):
    id: int
    name: str
    role: AgentRole
    persona: str = Field(description="The system prompt its runs start with.")
    connection: ProfileConnection | None = Field(
        description="As set; null: the default connection, whichever it is when a run starts."
    )
    model: str = Field(description='As set; "": the connection\'s model.')
    effective: Effective = Field(description="What the profile comes to now.")
    temperature: float
    specialisations: list[str]
    allowed_tools: list[str] = Field(description="Empty: every tool.")
    excluded_tools: list[str]
    concurrency_limit: int = Field(description="Runs of it at the same time, on all workers.")
    budgets: Budgets
    created_at: datetime
    updated_at: datetime


class ProfileList(Schema):
    success: bool = True
    profiles: list[ProfileOut]


class ProfileQuery(Schema):
    role: AgentRole | None = Field(default=None, description="Only the profiles of this role.")


@router.get("/profiles", response=ProfileList, summary="List agent profiles")
def list_profiles(request: HttpRequest, query: Query[ProfileQuery]):
    """Every agent profile by name (or those of one `role`): role, persona, connection and
    model as set and as they come to now, temperature, specialisations, tools, concurrency
    limit and budgets."""
    default = selectors.default_connection()
    profiles = selectors.profiles_for(request.user, role=query.role)
    return {"profiles": [profile_payload(p, default) for p in profiles]}


@router.get("/profiles/{int:profile_id}", response=ProfileOut, summary="An agent profile")
def get_profile(request: HttpRequest, profile_id: int):
    """One profile; 404 NOT_FOUND when there is none with this id."""
    profile = selectors.profile_get(user=request.user, profile_id=profile_id)
    return profile_payload(profile, selectors.default_connection())
