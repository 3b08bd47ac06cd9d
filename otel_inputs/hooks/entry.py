"""The hook a coding agent runs (``otel-inputs setup`` installs it): note the turn, hand off, exit 0.

A coding agent waits for its hooks (Claude Code before it sends the prompt), so this file does the
least it can and only with the standard library: it is run by path (``python -I -S entry.py``),
never imported through the ``otel_inputs`` package, whose imports cost several times an
interpreter start.  Per invocation it:

1. reads the hook's JSON from stdin (at most :data:`MAX_STDIN` bytes; anything else is a gap);
2. lists the instruction files the runtime's documented discovery rules would read for this
   working directory (plus the file the runtime itself reported, for Claude Code's
   ``InstructionsLoaded``), hashing each (bounded: :data:`MAX_FILES`, :data:`MAX_FILE_BYTES`,
   :data:`MAX_TOTAL_BYTES`), so the digest is of the bytes present at dispatch;
3. writes one job file into ``<store>/hooks/queue/`` (written aside, then renamed in);
4. starts the worker (``python -m otel_inputs.hooks.worker``) detached, without waiting, which
   copies the bytes into the artifact store, checks them against these digests and sends the
   records to ``otel-inputs collect``.

Everything is bounded by :data:`DEADLINE_S` (an alarm), and every failure ends in exit 0 with
nothing on stdout (Claude Code would add hook stdout to the model's context): a hook never blocks
or breaks the agent.  What could not be done is written into the job as a gap when the job can
still be written.
"""

from __future__ import annotations

import os
import sys
import time

# The interpreter's own C modules: ``hashlib`` loads OpenSSL and ``signal`` imports ``enum``, which
# together cost twice an interpreter start; these two cost nothing measurable.
try:
    from _sha256 import sha256  # CPython <= 3.11
except ImportError:  # pragma: no cover - CPython 3.12+ (or another interpreter)
    try:
        from _sha2 import sha256  # type: ignore[no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[no-redef]
import _signal as signal

VERSION = 1
MAX_STDIN = 1 << 20  # bytes of hook input read; more is a gap (never a crash, never a hang)
MAX_FILES = 64
MAX_FILE_BYTES = 4 << 20  # a larger instruction file is listed with its size, not hashed
MAX_TOTAL_BYTES = 16 << 20
MAX_DEPTH = 64  # ancestor directories walked
DEADLINE_S = 2.0
RUNTIMES = ("claude-code", "codex", "gemini-cli")
# Fields of the hook input a job keeps (others, and anything of another type, are dropped).
KEPT_FIELDS = ("session_id", "prompt_id", "turn_id", "cwd", "hook_event_name", "file_path", "memory_type",
               "load_reason", "trigger_file_path", "parent_file_path", "transcript_path", "source", "model",
               "timestamp")  # fmt: skip
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"}


class _Deadline(Exception):
    pass


class _ScanContext:
    """What the C JSON scanner reads from its decoder (the ``json`` package imports ``re``, ``enum`` and
    more, several times the cost of everything else this hook does)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict[str, str] = {}


def loads(text: str) -> object:
    """``json.loads`` by the interpreter's C scanner (``json`` itself only where there is no ``_json``)."""
    try:
        import _json
    except ImportError:  # pragma: no cover - not CPython
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip())
    try:
        doc, end = _json.make_scanner(_ScanContext())(text, start)  # type: ignore[attr-defined]
    except (StopIteration, SystemError, ValueError):  # the C scanner's error path expects a real decoder
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return doc


def dumps(value: object) -> str:
    """A job as JSON text, ASCII only (a path's undecodable bytes survive as \\udcXX escapes)."""
    try:
        from _json import encode_basestring_ascii as quote
    except ImportError:  # pragma: no cover - not CPython
        import json

        return json.dumps(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, dict):
        return "{" + ",".join(quote(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return quote(str(value))


def _on_alarm(signum: int, frame: object) -> None:
    raise _Deadline()


def read_stdin(stream: object) -> tuple[bytes, str | None]:
    """At most MAX_STDIN bytes of the hook input, and a gap when there was more."""
    raw = getattr(stream, "buffer", stream)
    data = raw.read(MAX_STDIN + 1)  # type: ignore[attr-defined]
    if len(data) > MAX_STDIN:
        return b"", f"hook input larger than {MAX_STDIN} bytes; not read"
    return data, None


def parse_input(data: bytes) -> tuple[dict[str, object], str | None]:
    """The kept fields of the hook's JSON object; a gap for anything that is not one."""
    try:
        doc = loads(data.decode("utf-8")) if data.strip() else {}
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}, "hook input is not JSON"
    if not isinstance(doc, dict):
        return {}, "hook input is not a JSON object"
    kept: dict[str, object] = {k: doc[k] for k in KEPT_FIELDS if isinstance(doc.get(k), str) and len(doc[k]) <= 4096}
    prompt = doc.get("prompt")
    if isinstance(prompt, str):
        encoded = prompt.encode("utf-8", "surrogatepass")
        kept["prompt_sha256"] = sha256(encoded).hexdigest()
        kept["prompt_length"] = len(prompt)
    return kept, None


def _candidates(runtime: str, cwd: str, home: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """(path, discovery rule) of every instruction file the runtime's documented rules may read."""
    out: list[tuple[str, str]] = []
    ancestors: list[str] = []
    d = os.path.abspath(cwd)
    for _ in range(MAX_DEPTH):
        ancestors.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if runtime == "claude-code":
        # Memory files from the working directory up to the root, the user's, and the managed policy;
        # AGENTS.md is listed too (present at dispatch; whether Claude Code read it is its own report).
        for d in ancestors:
            for name in ("CLAUDE.md", os.path.join(".claude", "CLAUDE.md"), "CLAUDE.local.md", "AGENTS.md"):
                out.append((os.path.join(d, name), "project"))
        out.append((os.path.join(home, ".claude", "CLAUDE.md"), "user"))
        out.append(("/etc/claude-code/CLAUDE.md", "managed"))
    elif runtime == "codex":
        # AGENTS.override.md / AGENTS.md in CODEX_HOME, then from the project root (the nearest
        # ancestor with .git, else the working directory alone) down to the working directory.
        codex_home = env.get("CODEX_HOME") or os.path.join(home, ".codex")
        for name in ("AGENTS.override.md", "AGENTS.md"):
            out.append((os.path.join(codex_home, name), "global"))
        root = next((i for i, d in enumerate(ancestors) if os.path.exists(os.path.join(d, ".git"))), 0)
        for d in reversed(ancestors[:root + 1]):
            for name in ("AGENTS.override.md", "AGENTS.md"):
                out.append((os.path.join(d, name), "project"))
    elif runtime == "gemini-cli":
        # The global GEMINI.md, then from the working directory up to the project root (.git) or home.
        out.append((os.path.join(home, ".gemini", "GEMINI.md"), "global"))
        for d in ancestors:
            out.append((os.path.join(d, "GEMINI.md"), "project"))
            if os.path.exists(os.path.join(d, ".git")) or d == home:
                break
    return out


def describe_file(path: str, role: str, budget: list[int]) -> dict[str, object]:
    """Size, mtime and SHA-256 of one file as it is now (no symlink followed for the digest's file)."""
    entry: dict[str, object] = {"path": path, "role": role}
    try:
        st = os.stat(path)
    except FileNotFoundError:
        entry["exists"] = False
        return entry
    except OSError as exc:
        entry.update(exists=True, error=f"unreadable: {exc.strerror or type(exc).__name__}")
        return entry
    entry.update(exists=True, size=st.st_size, mtime_ns=st.st_mtime_ns)
    if not os.path.isfile(path):
        entry["error"] = "not a regular file"
        return entry
    if st.st_size > MAX_FILE_BYTES or st.st_size > budget[0]:
        entry["error"] = f"limit_exceeded: {st.st_size} bytes, over the hook's bound"
        return entry
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        entry["error"] = f"unreadable: {exc.strerror or type(exc).__name__}"
        return entry
    budget[0] -= len(data)
    entry.update(size=len(data), sha256=sha256(data).hexdigest())
    return entry


def list_files(runtime: str, fields: dict[str, object], env: dict[str, str]) -> list[dict[str, object]]:
    """The reported file (if any) and the candidates that exist, each described once, bounded."""
    cwd = fields.get("cwd") if isinstance(fields.get("cwd"), str) else os.getcwd()
    home = env.get("HOME") or os.path.expanduser("~")
    wanted: list[tuple[str, str]] = []
    reported = fields.get("file_path")
    if fields.get("hook_event_name") == "Stop":
        return []  # the turn's end: its request bodies are the worker's to read (``bodies_dir``)
    if isinstance(reported, str) and fields.get("hook_event_name") == "InstructionsLoaded":
        wanted.append((reported, "reported_loaded"))
    else:
        wanted.extend(_candidates(runtime, str(cwd), home, env))
    budget = [MAX_TOTAL_BYTES]
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    for path, role in wanted:
        path = os.path.abspath(path)
        if path in seen:
            continue
        seen.add(path)
        if role != "reported_loaded" and not os.path.lexists(path):
            continue
        if len(out) >= MAX_FILES:
            out.append({"path": "", "role": "bound", "error": f"limit_exceeded: more than {MAX_FILES} files"})
            break
        out.append(describe_file(path, role, budget))
    return out


def _stat_fields(pid: int) -> tuple[str, int, str] | None:
    """(command name, parent pid, start time) of a process from /proc (Linux); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    name = raw[raw.index("(") + 1:raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2:].split()
    return name, int(rest[1]), rest[19]


def agent_process_key() -> str | None:
    """The agent process that ran this hook, as ``pid:start-time``: the nearest ancestor that is not a
    shell (hooks run through ``sh -c``).  Links the hooks of one agent process (Claude Code's
    ``InstructionsLoaded`` at start-up reports a session id a resumed session later replaces)."""
    pid = os.getppid()
    for _ in range(4):
        got = _stat_fields(pid)
        if got is None:
            return None
        name, parent, started = got
        if name not in _SHELLS:
            return f"{pid}:{started}"
        pid = parent
    return None


def write_job(queue: str, job: dict[str, object]) -> str:
    """Write the job aside, then rename it into the queue (a reader never sees half a job).  Not fsynced:
    the agent waits for the hook, and a job lost to a power cut reads as no hook record (a gap)."""
    os.makedirs(queue, mode=0o700, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    tmp = os.path.join(queue, "." + name + ".tmp")  # not *.json: a worker never takes half a job
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, dumps(job).encode("ascii"))
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(queue, name))
    return name


def start_worker(python: str, store: str, endpoint: str) -> None:
    """Start the worker detached (own session, no inherited stdio): the agent never waits for it."""
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                   (os.POSIX_SPAWN_DUP2, devnull, 2)]  # fmt: skip
        os.posix_spawn(python, [python, "-m", "otel_inputs.hooks.worker", "--store", store, "--endpoint", endpoint],
                       dict(os.environ), file_actions=actions, setsid=True)  # fmt: skip
    finally:
        os.close(devnull)


def run(argv: list[str], stdin: object, env: dict[str, str]) -> dict[str, object] | None:
    """Do the hook's work; return the job written (None when not even a job could be written)."""
    args = dict(zip(argv[1::2], argv[2::2]))
    runtime, store, endpoint = args.get("--runtime"), args.get("--store"), args.get("--endpoint", "")
    if runtime not in RUNTIMES or not store:
        return None
    now = time.time_ns()
    gaps: list[str] = []
    job: dict[str, object] = {"v": VERSION, "runtime": runtime, "time_ns": now, "endpoint": endpoint}
    try:
        data, gap = read_stdin(stdin)
        if gap:
            gaps.append(gap)
        fields, gap = parse_input(data)
        if gap:
            gaps.append(gap)
        job["input"] = fields
        job["process_key"] = agent_process_key()
        job["files"] = list_files(runtime, fields, env)
        # Claude Code writes each request body whole here (setup passes the directory it configured; Claude
        # Code does not hand its settings' env to hooks).
        bodies = args.get("--bodies-dir") or env.get("OTEL_LOG_RAW_API_BODIES", "").partition("file:")[2]
        if fields.get("hook_event_name") == "Stop" and bodies:
            job["bodies_dir"] = bodies
    except _Deadline:
        gaps.append(f"the hook stopped at its {DEADLINE_S} s bound before it listed every file")
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent: the failure becomes a gap
        gaps.append(f"hook failed: {type(exc).__name__}")
    job["gaps"] = gaps
    queue = os.path.join(store, "hooks", "queue")
    write_job(queue, job)
    python = args.get("--python") or sys.executable
    if args.get("--no-worker") != "1":
        start_worker(python, store, endpoint)
    return job


def main() -> None:
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE_S)
    try:
        run(sys.argv, sys.stdin, dict(os.environ))
    except BaseException:  # noqa: BLE001 - whatever happens (the deadline too), the agent goes on
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    os._exit(0)


if __name__ == "__main__":
    main()
