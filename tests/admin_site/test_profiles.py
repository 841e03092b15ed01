"""Agent profiles in the admin: staff only, tools picked from the ones that exist, and the
connection and model a profile comes to shown beside what is set."""

import pytest

from agents_app.models import AgentProfile, LLMConnection
from tests.support.clients import logged_in

PROFILES = "/admin/agents_app/agentprofile/"


def form(**fields):
    return {
        "name": "reviewer",
        "role": "custom",
        "persona": "You review pull requests.",
        "connection": "",
        "model": "",
        "temperature": "0.4",
        "specialisations": "code_review, security_analysis",
        "allowed_tools": ["read_file", "list_files"],
        "excluded_tools": ["write_file"],
        "concurrency_limit": "2",
        "max_tokens": "",
        "max_tool_calls": "",
        "max_seconds": "",
        **fields,
    }


def test_someone_who_is_not_staff_is_sent_to_the_admin_login(owner_session):
    response = owner_session.get(PROFILES)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_staff_without_the_permission_may_not_see_profiles(staff):
    assert logged_in(staff).get(PROFILES).status_code == 403


def test_staff_add_a_profile_with_tools_picked_from_the_registry(superuser_admin):
    page = superuser_admin.get(f"{PROFILES}add/").content.decode()

    response = superuser_admin.post(f"{PROFILES}add/", form())

    assert '<option value="http_get">http_get</option>' in page
    assert response.status_code == 302, response.content.decode()[:3000]
    reviewer = AgentProfile.objects.get(name="reviewer")
    assert reviewer.specialisations == ["code_review", "security_analysis"]
    assert (reviewer.allowed_tools, reviewer.excluded_tools) == (
        ["read_file", "list_files"],
        ["write_file"],
    )
    assert (reviewer.connection_id, reviewer.model) == (None, "")


def test_a_tool_name_no_tool_has_is_refused(superuser_admin):
    response = superuser_admin.post(
        f"{PROFILES}add/", form(allowed_tools=["read_file", "summon_dragon"])
    )

    assert response.status_code == 200
    assert "No tool is named summon_dragon" in response.content.decode()
    assert not AgentProfile.objects.filter(name="reviewer").exists()


def test_a_stored_tool_that_has_gone_is_shown_and_must_be_removed_to_save(
    superuser_admin, seeded_profiles
):
    AgentProfile.objects.filter(name="builder_agent").update(allowed_tools=["gone_tool"])
    builder = AgentProfile.objects.get(name="builder_agent")
    change = f"{PROFILES}{builder.pk}/change/"

    page = superuser_admin.get(change).content.decode()
    kept = superuser_admin.post(change, form(name="builder_agent", allowed_tools=["gone_tool"]))
    removed = superuser_admin.post(change, form(name="builder_agent", allowed_tools=["read_file"]))

    assert '<option value="gone_tool" selected>gone_tool</option>' in page
    assert kept.status_code == 200 and "No tool is named gone_tool" in kept.content.decode()
    assert removed.status_code == 302
    builder.refresh_from_db()
    assert builder.allowed_tools == ["read_file"]


def test_a_tool_both_allowed_and_excluded_is_refused_on_the_form(superuser_admin):
    response = superuser_admin.post(f"{PROFILES}add/", form(excluded_tools=["read_file"]))

    assert response.status_code == 200
    assert "Both allowed and excluded: read_file" in response.content.decode()


def test_a_profile_named_like_another_in_other_letters_is_refused(superuser_admin, seeded_profiles):
    response = superuser_admin.post(f"{PROFILES}add/", form(name="Builder_Agent"))

    assert response.status_code == 200
    assert "A profile with this name exists already." in response.content.decode()


def test_the_listing_shows_the_connection_and_model_each_profile_comes_to(
    superuser_admin, llm_configured, seeded_profiles
):
    hosted = LLMConnection.objects.create(
        name="hosted", base_url="https://api.example/v1", model="big-model"
    )
    AgentProfile.objects.filter(name="builder_agent").update(connection=hosted, model="coder-1")

    listing = superuser_admin.get(PROFILES).content.decode()
    builder = AgentProfile.objects.get(name="builder_agent")
    change = superuser_admin.get(f"{PROFILES}{builder.pk}/change/").content.decode()

    assert "env (the default)" in listing and "scripted (the connection&#x27;s)" in listing
    assert "hosted" in change and "coder-1" in change


@pytest.mark.dialect
def test_staff_search_profiles_by_specialisation(superuser_admin, seeded_profiles):
    listing = superuser_admin.get(PROFILES, {"q": "security_analysis"}).content.decode()

    assert "synthesis_agent" in listing and "builder_agent" not in listing
