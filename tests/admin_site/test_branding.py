"""The admin is AgentDesk's, and offers no Add form for rows that only runs create."""

import pytest
from django.test import Client

CREATED_BY_RUNS = ["task", "run", "plan", "step", "toolcall"]


@pytest.mark.django_db
def test_the_admin_is_branded_agentdesk(superuser_admin):
    index = superuser_admin.get("/admin/").content.decode()
    login = Client().get("/admin/login/").content.decode()

    assert "AgentDesk administration" in index and "Django administration" not in index
    assert "AgentDesk admin" in login


@pytest.mark.parametrize("model", CREATED_BY_RUNS)
def test_rows_that_only_runs_create_have_no_add_form(superuser_admin, model):
    index = superuser_admin.get("/admin/").content.decode()
    listing = superuser_admin.get(f"/admin/agents_app/{model}/")

    assert listing.status_code == 200
    assert f"/admin/agents_app/{model}/add/" not in index + listing.content.decode()
    assert superuser_admin.get(f"/admin/agents_app/{model}/add/").status_code == 403


def test_an_api_key_is_added_for_a_user_found_by_name_not_a_raw_id(superuser_admin, owner):
    form = superuser_admin.get("/admin/agents_app/apikey/add/").content.decode()
    found = superuser_admin.get(
        "/admin/autocomplete/",
        {
            "term": owner.username[:3],
            "app_label": "agents_app",
            "model_name": "apikey",
            "field_name": "user",
        },
    )

    assert 'class="admin-autocomplete' in form and "vForeignKeyRawIdAdminField" not in form
    assert owner.username in [item["text"] for item in found.json()["results"]]
