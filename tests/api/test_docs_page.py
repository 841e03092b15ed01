def test_the_api_docs_use_local_assets_not_a_cdn(client):
    html = client.get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn." not in html


def test_the_openapi_schema_lists_the_endpoints(client):
    paths = client.get("/api/openapi.json").json()["paths"]
    for path in [
        "/api/v1/agent/task",
        "/api/v1/runs",
        "/api/v1/runs/{run_id}",
        "/api/v1/runs/{run_id}/events",
        "/api/v1/runs/{run_id}/cancel",
        "/api/v1/tools",
        "/api/v1/health",
    ]:
        assert path in paths
