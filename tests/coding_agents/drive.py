"""Run one coding-agent CLI for two turns of one session, offline, inside a network namespace.

Run as ``unshare --net -- python drive.py --runtime R --out DIR`` (the tests do; so can a person
refreshing the fixtures).  Inside the namespace only loopback exists, every outside address is
routed to ``lo`` and :class:`netguard.OutsideRecorder` records any attempt to reach one.  Then:

1. the fake providers and ``otel-inputs collect`` (OTLP/HTTP and gRPC) start on 127.0.0.1;
2. ``otel-inputs setup <runtime>`` writes the runtime's telemetry settings and installs the hooks,
   exactly as a user would run it (plus the offline settings a test needs: the fake provider's
   URL and key, and the switches that keep each CLI from calling home);
3. two turns run: a prompt that makes the model read ``notes.txt`` with the CLI's own read tool,
   then a follow-up in the same session (``claude -p --continue``, ``gemini --resume latest``,
   ``codex exec resume --last``);
4. the hook workers finish, the collector stops (flushing what it acknowledged), and
   ``DIR/report.json`` records exit codes, outputs, the provider requests and outside contacts.

``--capture`` puts a recording tee in front of the collector's OTLP/HTTP port: every request body
the CLI and the hooks sent is kept under ``DIR/otlp/`` (the fixtures in ``fixtures/`` are such
captures).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fake_providers import FakeProviders, Script  # noqa: E402
from netguard import OutsideRecorder, make_everything_local, only_loopback_interfaces  # noqa: E402

BIN = HERE / "node_modules" / ".bin"
PROMPT_1 = "Please read the file notes.txt and tell me the secret word."
PROMPT_2 = "Thanks. Now say goodbye."
NOTES = "the secret word is pumpkin\n"
RUN_TIMEOUT_S = 150.0
INSTRUCTION_FILES = {"claude-code": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md"}
LARGE_FILE_BYTES = 70_000  # over Claude Code's 60 KB inline body cut


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def instruction_text(runtime: str, large: bool) -> str:
    head = f"# Project rules ({INSTRUCTION_FILES[runtime]})\nAlways answer briefly.\n"
    if not large:
        return head
    line = "- Keep every answer short; this line pads the file past the 60 KB inline body limit.\n"
    return head + line * (LARGE_FILE_BYTES // len(line) + 1)


def read_body(h: BaseHTTPRequestHandler) -> bytes:
    """A request body sent with Content-Length or chunked (Claude Code's exporter sends chunked)."""
    if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
        chunks = []
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline().strip():
                    pass
                return b"".join(chunks)
            chunks.append(h.rfile.read(size))
            h.rfile.readline()
    return h.rfile.read(int(h.headers.get("Content-Length") or 0))


class OtlpTee:
    """OTLP/HTTP in front of the collector: keeps each request body, forwards it, answers as it did."""

    def __init__(self, out: Path, upstream_port: int) -> None:
        self.out, self.upstream, self.seq, self.lock = out, upstream_port, 0, threading.Lock()
        out.mkdir(parents=True, exist_ok=True)
        tee = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802
                body = read_body(self)
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "content-encoding")}
                with tee.lock:
                    tee.seq += 1
                    name = f"{tee.seq:04d}-{self.path.strip('/').replace('/', '_')}.bin"
                    (tee.out / name).write_bytes(body)
                    with open(tee.out / "index.jsonl", "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"file": name, "path": self.path, "headers": headers}) + "\n")
                conn = http.client.HTTPConnection("127.0.0.1", tee.upstream, timeout=60)
                try:
                    conn.request("POST", self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status, ctype = resp.status, resp.getheader("Content-Type") or "application/x-protobuf"
                finally:
                    conn.close()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")


def merge_json(path: Path, doc: dict[str, Any]) -> None:
    current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    current.update(doc)
    write_json(path, current)


def prepare(runtime: str, home: Path, proj: Path, fake: FakeProviders, large: bool, title_call: bool) -> dict[str, str]:
    """The project files and the offline settings; returns the environment the CLI runs with."""
    proj.mkdir(parents=True)
    home.mkdir(parents=True)
    (proj / INSTRUCTION_FILES[runtime]).write_text(instruction_text(runtime, large), encoding="utf-8")
    (proj / "notes.txt").write_text(NOTES, encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb"}
    if runtime == "claude-code":
        # A shadowed file: AGENTS.md beside CLAUDE.md (present at dispatch; Claude Code 2.1.197 reads CLAUDE.md).
        (proj / "AGENTS.md").write_text("# AGENTS.md beside CLAUDE.md\nUse tabs.\n", encoding="utf-8")
        env.update(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="sk-ant-offline-test", DISABLE_AUTOUPDATER="1",
                   OTEL_BSP_SCHEDULE_DELAY="200", OTEL_BLRP_SCHEDULE_DELAY="200")  # fmt: skip
        if not title_call:
            # Claude Code's "nonessential" traffic goes to api.anthropic.com whatever ANTHROPIC_BASE_URL says
            # (bootstrap, feature flags, the MCP registry); switching it off also switches off the
            # session-title call, so --title-call keeps it for a fixture (its outside attempts are refused
            # in the namespace, and recorded in the report).
            env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    elif runtime == "gemini":
        merge_json(home / ".gemini" / "settings.json", {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
        })
        env.update(GEMINI_API_KEY="offline-test-key", GOOGLE_GEMINI_BASE_URL=fake.base_url,
                   GEMINI_CLI_TRUST_WORKSPACE="true")  # fmt: skip
    elif runtime == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "gpt-offline"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "Fake"\n'
            f'base_url = "{fake.base_url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_PROVIDER_KEY"\n\n'
            # plugins and remote plugins would fetch their catalogs from github.com
            "[features]\nplugins = false\nremote_plugin = false\n", encoding="utf-8")
        env.update(CODEX_HOME=str(codex_home), FAKE_PROVIDER_KEY="sk-offline-test")
    return env


def turns(runtime: str) -> list[list[str]]:
    if runtime == "claude-code":
        claude = str(BIN / "claude")
        return [[claude, "-p", PROMPT_1], [claude, "-p", "--continue", PROMPT_2]]
    if runtime == "gemini":
        gemini = str(BIN / "gemini")
        return [[gemini, "-p", PROMPT_1], [gemini, "--resume", "latest", "-p", PROMPT_2]]
    codex = str(BIN / "codex")
    common = ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
    return [[codex, *common, PROMPT_1], [codex, *common, "resume", "--last", PROMPT_2]]


def wait_hooks(store: Path, timeout_s: float = 30.0) -> list[str]:
    """Wait until the hook workers have emptied the queue; the names of jobs still there."""
    deadline = time.monotonic() + timeout_s
    left: list[str] = []
    while time.monotonic() < deadline:
        left = [p.name for d in ("queue", "work") for p in (store / "hooks" / d).glob("*.json")]
        if not left:
            break
        time.sleep(0.2)
    return left


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtime", required=True, choices=sorted(INSTRUCTION_FILES))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--protocol", choices=("http", "grpc"), default="http")
    parser.add_argument("--raw-bodies", choices=("inline", "file", "off"), default="inline")
    parser.add_argument("--large", action="store_true", help="an instruction file over 60 KB")
    parser.add_argument("--capture", action="store_true", help="keep every OTLP/HTTP body under OUT/otlp/")
    parser.add_argument("--title-call", action="store_true", help="Claude Code: keep its session-title call")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    report: dict[str, Any] = {"runtime": args.runtime, "turns": []}
    make_everything_local()
    report["interfaces"] = only_loopback_interfaces()
    recorder = OutsideRecorder().start()
    home, proj, store, db = out / "home", out / "proj", out / "store", out / "t.duckdb"
    fake = FakeProviders(Script(project_dir=str(proj))).start()
    http_port, grpc_port = free_port(), free_port()
    collector_log = open(out / "collector.log", "w", encoding="utf-8")  # noqa: SIM115
    otel_inputs = Path(sys.executable).parent / "otel-inputs"
    collector = subprocess.Popen([str(otel_inputs), "collect", "--db", str(db), "--store", str(store), "--port",
                                  str(http_port), "--grpc-port", str(grpc_port)],
                                 stdout=collector_log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        if not (wait_port(http_port) and wait_port(grpc_port)):
            raise RuntimeError("otel-inputs collect did not start")
        endpoint_port = OtlpTee(out / "otlp", http_port).port if args.capture else http_port
        env = prepare(args.runtime, home, proj, fake, args.large, args.title_call)
        scope = ["--user"] if args.runtime == "codex" else ["--project", str(proj)]
        setup = subprocess.run([str(otel_inputs), "setup", args.runtime, *scope, "--store", str(store),
                                "--endpoint", f"http://127.0.0.1:{endpoint_port}",
                                "--grpc-endpoint", f"http://127.0.0.1:{grpc_port}", "--protocol", args.protocol,
                                "--raw-bodies", args.raw_bodies],
                               env={**env, "PATH": os.environ.get("PATH", "")}, capture_output=True, text=True,
                               timeout=120)  # fmt: skip
        report["setup"] = {"exit": setup.returncode, "stdout": setup.stdout, "stderr": setup.stderr[-4000:]}
        for argv in turns(args.runtime):
            started = time.time()
            try:
                done = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                                      stdin=subprocess.DEVNULL)  # fmt: skip
                result = {"exit": done.returncode, "stdout": done.stdout[-4000:], "stderr": done.stderr[-6000:]}
            except subprocess.TimeoutExpired as exc:
                result = {"exit": -9, "stdout": str(exc.stdout or "")[-4000:], "stderr": "timed out"}
            result.update(argv=argv[1:], seconds=round(time.time() - started, 2))
            report["turns"].append(result)
        report["hook_jobs_left"] = wait_hooks(store)
        time.sleep(1.0)  # the CLIs export on exit; give the last request a moment to be acknowledged
    finally:
        collector.send_signal(signal.SIGTERM)
        try:
            report["collector_exit"] = collector.wait(timeout=90)
        except subprocess.TimeoutExpired:
            collector.kill()
            report["collector_exit"] = collector.wait(timeout=30)
        collector_log.close()
        fake.stop()
        recorder.stop()
        report["outside_contacts"] = recorder.contacts
        report["provider_requests"] = [{"path": r.path, "body": r.body} for r in fake.received]
        write_json(out / "report.json", report)


if __name__ == "__main__":
    main()
