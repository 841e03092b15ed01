"""The embedded local model: llama.cpp's OpenAI-compatible server, from the `xllamacpp` wheel,
serving one GGUF file on loopback until SIGTERM or SIGINT.

`uv run go` runs it as a child (`python -m config.local_model`) when LOCAL_MODEL is set and
LLM_BASE_URL is not; every process then finds it at `local_model_url()`, the default
LLM_BASE_URL (config/settings.py). Run by hand, arguments override the LOCAL_MODEL_* settings;
`--port 0` lets the system choose a free port. The server listens only once the model is
loaded, so `/health` answering 200 means it is ready.

Two slots share one KV cache of the context size: a web request and a worker's call are
answered side by side, for the memory of one context (each may use all of it while the other
is idle).
"""

import argparse
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from django.core.exceptions import ImproperlyConfigured

from config.env import BASE_DIR, env_int, env_str, load_dotenv

HOST = "127.0.0.1"
DEFAULT_PORT = 8102
DEFAULT_CONTEXT = 4096
SLOTS = 2
# llama.cpp keeps finished prompts in RAM to reuse them (the system prompts repeat); its
# default allows 8 GiB.
PROMPT_CACHE_MIB = 512
# llama.cpp's log levels: 1 errors, 2 warnings, 3 info (a few lines per request), 4 debug.
LOG_VERBOSITY = 2
LOG_PREFIX = b"local model: "


@dataclass(frozen=True)
class LocalModel:
    """What the embedded server serves, and where."""

    path: Path
    context: int
    threads: int
    port: int

    @property
    def name(self) -> str:
        """The model's name on the wire (LLM_MODEL's default): the file's stem."""
        return self.path.stem


class MissingModelFile(ImproperlyConfigured):
    """LOCAL_MODEL names no file."""


def default_threads() -> int:
    """Every CPU this process may run on but one. llama.cpp's threads meet at a barrier for
    every token: one that waits for a CPU holds up the others. With as many threads as CPUs on
    a 2-CPU machine that was also busy, SmolLM2-135M made 1-2 tokens a second; with one thread
    fewer, 60-70."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)


def model_path(raw: str) -> Path:
    """LOCAL_MODEL as a path: `~` expanded, a relative one relative to the project."""
    return BASE_DIR / Path(raw).expanduser()


def local_model_from_env() -> LocalModel | None:
    """The LOCAL_MODEL_* settings, or None when LOCAL_MODEL is empty. Does not look at the file."""
    raw = env_str("LOCAL_MODEL").strip()
    if not raw:
        return None
    return LocalModel(
        path=model_path(raw),
        context=env_int("LOCAL_MODEL_CONTEXT", DEFAULT_CONTEXT, minimum=256),
        threads=env_int("LOCAL_MODEL_THREADS", default_threads(), minimum=1),
        port=env_int("LOCAL_MODEL_PORT", DEFAULT_PORT, minimum=1),
    )


def local_model_url(port: int) -> str:
    """The OpenAI-compatible base URL of the embedded server on `port`."""
    return f"http://{HOST}:{port}/v1"


def check_model_file(path: Path) -> None:
    """Raise MissingModelFile, naming the path, unless it is a readable file."""
    if not path.is_file():
        raise MissingModelFile(f"LOCAL_MODEL names {path}, which is not a file")
    if not os.access(path, os.R_OK):
        raise MissingModelFile(f"LOCAL_MODEL names {path}, which this user cannot read")


def serve(model: LocalModel, stop: threading.Event) -> None:
    """Serve `model` until `stop` is set; print the base URL once it answers."""
    check_model_file(model.path)
    import xllamacpp  # here: a 100 MB library that the processes importing settings never need

    params = xllamacpp.CommonParams()
    params.model.path = str(model.path)
    params.model_alias = {model.name}
    params.hostnames = [HOST]
    params.port = model.port
    params.n_ctx = model.context
    params.n_parallel = SLOTS
    params.kv_unified = True
    params.cpuparams.n_threads = model.threads
    params.cpuparams_batch.n_threads = model.threads
    params.use_jinja = True  # the model's own chat template, which reports its capabilities
    params.cache_ram_mib = PROMPT_CACHE_MIB
    params.ui = False
    # Only AgentDesk's processes call it, never a page in a browser: no site may (CORS).
    params.cors_origins = ""
    params.verbosity = LOG_VERBOSITY
    # Loads the model, then listens: /health answers only once the model is ready.
    server = xllamacpp.Server(params)
    try:
        port = int(server.listening_address.rsplit(":", 1)[1])
        print(f"serving {model.path} at {local_model_url(port)}", flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        del server  # stops the HTTP threads and frees the model


def _prefix_lines(source: int, target: int) -> None:
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            os.write(target, LOG_PREFIX + line)


class PrefixedOutput:
    """Everything written to stdout and stderr, llama.cpp's own log included, goes through
    threads that prefix each line, so it stands out among the other processes' lines."""

    def __init__(self) -> None:
        self._streams: list[tuple[int, int, threading.Thread]] = []
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
            descriptor = stream.fileno()
            original = os.dup(descriptor)
            read_end, write_end = os.pipe()
            os.dup2(write_end, descriptor)
            os.close(write_end)
            thread = threading.Thread(target=_prefix_lines, args=(read_end, original), daemon=True)
            thread.start()
            self._streams.append((descriptor, original, thread))

    def close(self) -> None:
        """Put the streams back, once the threads have passed on every line."""
        sys.stdout.flush()
        sys.stderr.flush()
        for descriptor, original, thread in self._streams:
            os.dup2(original, descriptor)  # closes the pipe's last write end: the thread ends
            thread.join(timeout=5)
            os.close(original)


def _arguments(argv: list[str] | None) -> tuple[LocalModel, bool]:
    configured = local_model_from_env()
    parser = argparse.ArgumentParser(
        prog="python -m config.local_model", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--model", help="the GGUF file (default: LOCAL_MODEL)")
    parser.add_argument("--context", type=int, help="context size in tokens")
    parser.add_argument("--threads", type=int, help="CPU threads")
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument(
        "--no-prefix", action="store_true", help="do not prefix output lines with 'local model: '"
    )
    given = parser.parse_args(argv)
    if given.model is None and configured is None:
        parser.error("name the GGUF file with --model or LOCAL_MODEL")
    model = LocalModel(
        path=model_path(given.model) if given.model else configured.path,
        context=given.context or (configured.context if configured else DEFAULT_CONTEXT),
        threads=given.threads or (configured.threads if configured else default_threads()),
        port=(
            given.port
            if given.port is not None
            else (configured.port if configured else DEFAULT_PORT)
        ),
    )
    return model, not given.no_prefix


def main(argv: list[str] | None = None) -> None:
    load_dotenv(BASE_DIR / ".env")
    model, prefix = _arguments(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    output = PrefixedOutput() if prefix else None
    code = 0
    try:
        serve(model, stop)
        print("stopped", flush=True)
    except ImproperlyConfigured as error:
        print(f"{error}; not starting", file=sys.stderr, flush=True)
        code = 2
    except Exception as error:  # llama.cpp's own refusal: a bad file, no memory, a busy port
        print(f"could not serve {model.path}: {error}", file=sys.stderr, flush=True)
        code = 1
    finally:
        if output is not None:
            output.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
