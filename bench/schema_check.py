"""The REST API against its own OpenAPI document: schemathesis generates requests from it and
sends them to a live daphne as an ordinary (non-staff) user with an API key.

Three checks, each must have 0 failures: no 5xx (not_a_server_error), every answer fits its
documented schema (response_schema_conformance) and every status is documented
(status_code_conformance). Prints operations, requests and failures by check; exits 1 on any
failure. Run: `uv run python bench/schema_check.py [--max-examples N]` (SQLite and an
embedded Valkey in a temporary VAR_DIR unless DATABASE_URL / REDIS_URL are set).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
from harness import ROOT, start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

CHECKS = ["not_a_server_error", "response_schema_conformance", "status_code_conformance"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_caller() -> str:
    """A non-staff user with an API key: what any script client is."""
    from django.contrib.auth import get_user_model

    from agents_app.models import ApiKey

    user = get_user_model().objects.create_user("schema-check", password=None)
    raw = ApiKey.generate()
    key = ApiKey(user=user, name="schema check")
    key.set_key(raw)
    key.save()
    return raw


def start_server(scratch: Path, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "schema-check-" + "x" * 40,
        # Submitting needs an LLM configured; no worker runs, so nothing ever calls it.
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_MODEL": "scripted",
        # `wait: true` answers 202 after a second instead of holding a request for minutes.
        "API_MAX_WAIT": "1",
        # Generated webhook hosts are not looked up in DNS: the address guard has its own tests.
        "WEBHOOK_ALLOW_PRIVATE": "true",
    }
    # Like `go`: hashed static files first, or any HTML page (a 404 outside /api/) is a 500.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    log = (scratch / "daphne.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"daphne exited ({server.returncode}); see {scratch / 'daphne.log'}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=5)
            return server
        except httpx.HTTPError:
            time.sleep(0.2)  # polling a process that is starting: there is nothing to wait on
    server.kill()
    raise SystemExit("daphne did not answer within 60 s")


def run_schemathesis(port: int, key: str, report: Path, max_examples: int) -> int:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"http://127.0.0.1:{port}/api/openapi.json",
        "--header",
        f"Authorization: Bearer {key}",
        "--checks",
        ",".join(CHECKS),
        "--max-examples",
        str(max_examples),
        "--seed",
        "11",
        "--workers",
        "2",
        "--request-timeout",
        "15",
        "--suppress-health-check",
        "all",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(report),
    ]
    # In the scratch directory: schemathesis keeps its example database in ./.schemathesis/.
    # Its own report goes to a file, shown only on failure: its closing line looks like a test
    # runner's ("1 warning in 28.86s") and would be read as CI's last word on tests.
    with open(report.parent / "schemathesis.log", "w") as log:
        return subprocess.run(
            command,
            cwd=report.parent,
            env={**os.environ, "NO_COLOR": "1"},
            stdout=log,
            stderr=subprocess.STDOUT,
        ).returncode


def counts(report: Path) -> tuple[int, int, Counter, Counter]:
    """(operations, requests, statuses, failures by check) from schemathesis's NDJSON events."""
    operations, requests, statuses, failures = set(), 0, Counter(), Counter()
    for line in report.read_text().splitlines():
        finished = json.loads(line).get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        interactions = recorder.get("interactions") or {}
        label = recorder.get("label") or ""
        if interactions and " /" in label:  # "POST /api/v1/...", not a stateful scenario
            operations.add(label)
        requests += len(interactions)
        for interaction in interactions.values():
            statuses[(interaction.get("response") or {}).get("status_code")] += 1
        for results in (recorder.get("checks") or {}).values():
            for check in results:
                if check.get("status") == "failure":
                    failures[check["name"]] += 1
    return len(operations), requests, statuses, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=25)
    args = parser.parse_args()

    scratch, valkey = start_django("schema")
    key = make_caller()
    port = free_port()
    server = start_server(scratch, port)
    report = scratch / "schemathesis.ndjson"
    try:
        started = time.monotonic()
        status = run_schemathesis(port, key, report, args.max_examples)
        elapsed = time.monotonic() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        if valkey is not None:
            valkey.stop()
    operations, requests, statuses, failures = counts(report)
    print(f"schema check: {operations} operations, {requests} requests in {elapsed:.0f} s")
    by_status = ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items(), key=str))
    print(f"schema check: answers by status: {by_status}")
    for check in CHECKS:
        print(f"schema check: {check}: {failures[check]} failures")
    server_errors = (scratch / "daphne.log").read_text().count("Internal Server Error")
    print(f"schema check: server log: {server_errors} 'Internal Server Error' lines")
    failed = status != 0 or sum(failures.values()) or server_errors
    if failed:
        print((scratch / "schemathesis.log").read_text())
        print(f"schema check: FAILED (schemathesis exit {status}); kept {scratch}")
        return 1
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
