"""Every `otel-inputs` command in the README, docs/ and collector-config/ runs as written.

Commands are taken from the shell blocks of the Markdown files and from the comments of the
Collector configurations. Each is parsed by the real CLI (every option known, every required option
given, every value of the right type) with the command's own action replaced, so nothing is started;
recipes that start several receivers side by side must not bind a port twice, nor a port their
Collector listens on; and the scale-out recipe is started for real.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from otel_inputs.exporter.cli import main

ROOT = Path(__file__).parents[1]
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "collector-config").glob("*.md"))]
COLLECTOR_CONFIGS = sorted((ROOT / "collector-config").glob("*.yaml"))
SHELL_INFO = {"", "sh", "bash", "console", "shell"}
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass(frozen=True)
class DocCommand:
    """One `otel-inputs` command as a document writes it."""

    where: str  # file:line
    block: str  # file:first line of its code block (or comment paragraph)
    env: dict[str, str]
    argv: list[str]  # after `otel-inputs`

    @property
    def text(self) -> str:
        return "otel-inputs " + shlex.join(self.argv)


def _split_commands(line: str) -> Iterator[list[str]]:
    """The commands of one shell line: `a & b`, `a && b` and `a; b` are several."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&;|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    current: list[str] = []
    for token in lexer:
        if token in ("&", "&&", ";", "|", "||"):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _commands_in(line: str, where: str, block: str) -> Iterator[DocCommand]:
    for tokens in _split_commands(line.removeprefix("$ ")):
        # A synopsis's optional parts (`[--db FILE]`) are checked too: taken as given.
        tokens = [t.removeprefix("[").removesuffix("]") for t in tokens]
        env: dict[str, str] = {}
        while tokens and ENV_ASSIGNMENT.match(tokens[0]):
            key, _, value = tokens.pop(0).partition("=")
            env[key] = value
        if tokens and tokens[0] == "otel-inputs":
            yield DocCommand(where, block, env, tokens[1:])


def markdown_commands(path: Path) -> Iterator[DocCommand]:
    """`otel-inputs` lines of a Markdown file's shell blocks (continuations joined)."""
    rel = path.relative_to(ROOT)
    lines = path.read_text(encoding="utf-8").splitlines()
    fence: str | None = None
    block = ""
    pending = ""
    pending_at = 0
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            block = f"{rel}:{number}"
            continue
        if fence not in SHELL_INFO:
            continue
        if not pending:
            pending_at = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        yield from _commands_in(pending + stripped, f"{rel}:{pending_at}", block)
        pending = ""


def config_commands(path: Path) -> Iterator[DocCommand]:
    """`otel-inputs` commands in a Collector configuration's comments (`# Run: ...`, `#   otel-inputs ...`)."""
    rel = path.relative_to(ROOT)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text.startswith("#"):
            continue
        text = text.lstrip("#").strip()
        text = re.sub(r"^[A-Za-z][\w ]*:\s+(?=otel-inputs )", "", text)  # "Run:  otel-inputs ..."
        if text.startswith("otel-inputs ") and "-->" not in text:
            yield from _commands_in(text, f"{rel}:{number}", f"{rel}")


def all_commands() -> list[DocCommand]:
    found = [c for p in MARKDOWN for c in markdown_commands(p)]
    return found + [c for p in COLLECTOR_CONFIGS for c in config_commands(p)]


def _leaf_commands(group: click.Group) -> Iterator[click.Command]:
    for command in group.commands.values():
        if isinstance(command, click.Group):
            yield from _leaf_commands(command)
        else:
            yield command


def parse(command: DocCommand, monkeypatch: pytest.MonkeyPatch, cwd: Path) -> dict[str, Any]:
    """Run the real CLI's parsing on the command; returns the parameters its action would get."""
    seen: list[dict[str, Any]] = []
    for leaf in _leaf_commands(main):
        monkeypatch.setattr(leaf, "callback", lambda **kwargs: seen.append(kwargs))
    for key in [k for k in os.environ if k.startswith("OTEL_INPUTS_")]:
        monkeypatch.delenv(key)
    for key, value in command.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(cwd)
    for token in command.argv:  # a file a command reads (`bundle verify FILE`) is made to exist
        if re.fullmatch(r"[\w./-]+\.(tar|tgz)", token):
            (cwd / token).parent.mkdir(parents=True, exist_ok=True)
            (cwd / token).touch()
    main.main(args=list(command.argv), prog_name="otel-inputs", standalone_mode=False)
    assert len(seen) == 1, f"{command.where}: `{command.text}` selected no command"
    return seen[0]


COMMANDS = all_commands()


def test_the_docs_hold_the_commands_users_copy() -> None:
    """The extraction finds the collect, view, demo, store, purge and bundle commands the docs show."""
    firsts = {c.argv[0] for c in COMMANDS if c.argv}
    assert {"collect", "view", "demo", "store", "purge", "bundle"} <= firsts
    assert any(c.where.startswith("collector-config/README.md") for c in COMMANDS)
    assert any(".yaml:" in c.where for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.where} {c.text}" for c in COMMANDS])
def test_documented_command_parses(command: DocCommand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI accepts the documented command as written: known options, required ones given, valid values."""
    try:
        parse(command, monkeypatch, tmp_path)
    except click.ClickException as error:
        pytest.fail(f"{command.where}: `{command.text}` fails as written: {error.format_message()}")


def _collect_ports(params: dict[str, Any]) -> set[int]:
    ports = {params["port"]}
    if not params.get("no_grpc"):
        ports.add(params["grpc_port"])
    return ports


def _collector_listen_ports() -> set[int]:
    """Every port a Collector configuration of collector-config/ listens on (its receivers)."""
    ports: set[int] = set()
    for path in COLLECTOR_CONFIGS:
        text = re.sub(r"\$\{env:[A-Z_]+:-([^}]*)\}", r"\1", path.read_text(encoding="utf-8"))
        for receiver in (yaml.safe_load(text).get("receivers") or {}).values():
            for protocol in ((receiver or {}).get("protocols") or {}).values():
                endpoint = (protocol or {}).get("endpoint")
                if endpoint:
                    ports.add(int(str(endpoint).rsplit(":", 1)[1]))
    return ports


def test_receivers_started_side_by_side_never_share_a_port(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Within one recipe the `collect` commands bind distinct ports, and none behind a Collector binds one it listens on."""
    by_block: dict[str, list[tuple[DocCommand, set[int]]]] = {}
    for command in COMMANDS:
        if command.argv[:1] == ["collect"]:
            by_block.setdefault(command.block, []).append((command, _collect_ports(parse(command, monkeypatch, tmp_path))))
    collector_ports = _collector_listen_ports()
    assert collector_ports, "no receiver endpoint found in collector-config/*.yaml"
    for block, commands in by_block.items():
        taken: dict[int, str] = {}
        for command, ports in commands:
            for port in ports:
                assert port not in taken, f"{block}: `{command.text}` binds {port}, as `{taken[port]}` does"
                taken[port] = command.text
            if block.startswith("collector-config/"):
                assert not ports & collector_ports, (
                    f"{command.where}: `{command.text}` binds {sorted(ports & collector_ports)}, "
                    "where the Collector it sits behind listens")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_scale_out_recipe_starts_every_sink(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The scale-out recipe's `collect` commands, run as written side by side, all listen."""
    recipe = [c for c in COMMANDS if c.where.startswith("collector-config/README.md") and c.argv[:1] == ["collect"]
              and any("shard" in a for a in c.argv)]
    assert len(recipe) >= 3
    ports = set().union(*(_collect_ports(parse(c, monkeypatch, tmp_path)) for c in recipe))
    if not all(_free(p) for p in ports):
        pytest.skip(f"one of the recipe's ports {sorted(ports)} is taken on this machine")
    exe = Path(sys.executable).with_name("otel-inputs")
    procs = [subprocess.Popen([str(exe), *c.argv], cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for c in recipe]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(_free(p) for p in ports):
            for proc, command in zip(procs, recipe):
                if proc.poll() is not None:
                    pytest.fail(f"`{command.text}` exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.2)
        assert not [p for p in ports if _free(p)], "a sink of the recipe never listened"
        assert all(p.poll() is None for p in procs)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def benchmark_options() -> dict[str, dict[str, str]]:
    """Per benchmark module the docs quote (`python -m benchmarks...`), each option they give it and where."""
    found: dict[str, dict[str, str]] = {}
    for path in MARKDOWN:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for text in re.findall(r"python -m benchmarks[\w.]*(?: +--?[\w-]+(?: +[\w.,=]+)?)*", line):
                module, *args = shlex.split(text)[2:]
                options = found.setdefault(module, {})
                for option in (a.split("=")[0] for a in args if a.startswith("-")):
                    options.setdefault(option, f"{path.relative_to(ROOT)}:{number}")
    return dict(sorted(found.items()))


BENCHMARKS = benchmark_options()


@pytest.mark.parametrize("module", BENCHMARKS)
def test_documented_benchmark_command_exists(module: str) -> None:
    """Each documented benchmark module answers --help and knows every option the docs give it."""
    result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    missing = re.search(r"ModuleNotFoundError: No module named '(chdb|clickhouse_connect)", result.stderr)
    if missing and os.environ.get("CI") != "true":
        pytest.skip(f"python -m {module} needs {missing.group(1)} (the [clickhouse] extra), not installed here")
    assert result.returncode == 0, f"python -m {module} --help failed: {result.stderr[-500:]}"
    for option, where in BENCHMARKS[module].items():
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", result.stdout), (
            f"{where}: python -m {module} has no option {option}")
