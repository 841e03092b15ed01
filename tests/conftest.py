import pytest
from django.contrib.auth import get_user_model

from agents_app.models import ApiKey
from tests.support.llm_server import ScriptedLLMServer
from tests.support.worker import Worker
from tools_app.mcp_client import shutdown_pool

# Fixtures that start processes (daphne, Celery workers) for all the tests of their module or
# package. Under pytest-xdist those tests form a group that runs in one test process (see
# tests/parallel.py), which starts the processes once instead of each process its own copies.
PROCESS_FIXTURES = ("stack_processes", "web")


@pytest.hookimpl(tryfirst=True)  # before tests/parallel.py reads the marks
def pytest_collection_modifyitems(config, items):
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        for name in PROCESS_FIXTURES:
            if name in item.fixturenames:
                definition = item._fixtureinfo.name2fixturedefs[name][-1]
                where = item.module.__name__ if definition.scope == "module" else definition.baseid
                item.add_marker(pytest.mark.xdist_group(f"{name}:{where}"))
                break


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-123")


@pytest.fixture
def outsider(db):
    return get_user_model().objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def llm_configured(settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_MODEL = "scripted"
    return settings


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    """In-process tests render pages without running collectstatic first."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def no_lingering_mcp_pool():
    """A run executed in the test process starts the process's MCP pool; close it after the
    test, or it would keep connecting to later tests' servers (spawning their stdio servers)."""
    yield
    shutdown_pool()


@pytest.fixture
def api_key_for():
    def make(user) -> bytes:
        """A new API key of `user`, as an Authorization header value."""
        raw = ApiKey.generate()
        key = ApiKey(user=user, name="ws")
        key.set_key(raw)
        key.save()
        return f"Bearer {raw}".encode()

    return make


@pytest.fixture(scope="session")
def llm_server():
    server = ScriptedLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def llm(llm_server, settings):
    """The scripted LLM, reset, and the web side configured to use it."""
    llm_server.reset()
    settings.LLM_BASE_URL = llm_server.base_url
    settings.LLM_MODEL = "scripted"
    return llm_server


@pytest.fixture
def start_worker(llm_server, tmp_path, transactional_db):
    """Start real Celery workers on demand; all are stopped after the test."""
    workers: list[Worker] = []

    def start(name: str = "w1", **env: str) -> Worker:
        env.setdefault("LLM_BASE_URL", llm_server.base_url)
        env.setdefault("LLM_MODEL", "scripted")
        worker = Worker(name, tmp_path, **env).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
