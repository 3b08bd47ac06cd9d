"""``otel-inputs setup claude-code | codex | gemini``: point a coding agent's own telemetry at the
local ``otel-inputs collect`` and install the otel-inputs hooks (docs/coding-agents.md).

The plan is computed by plain functions (tested without click): each returns the files it would
write and their new text, plus the content switches it turns on and what each sends.  ``--undo``
removes exactly what setup added: the previous value of every settings key it changed is kept in
a sidecar file beside the settings (``<file>.otel-inputs-setup.json``); Codex's ``config.toml``
gets one delimited block, removed whole.  Every file changed is printed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from otel_inputs import names as n

SIDECAR_SUFFIX = ".otel-inputs-setup.json"
HOOK_MARK = "otel_inputs/hooks/entry.py"
TOML_BEGIN = "# >>> otel-inputs setup codex (managed block: `otel-inputs setup codex --undo` removes it)"
TOML_END = "# <<< otel-inputs setup codex"
CLAUDE_HOOK_EVENTS = ("UserPromptSubmit", "InstructionsLoaded", "Stop")
CODEX_HOOK_EVENTS = ("UserPromptSubmit",)
GEMINI_HOOK_EVENTS = ("BeforeAgent",)
RUNTIME_NAMES = {"claude-code": n.RUNTIME_CLAUDE_CODE, "codex": n.RUNTIME_CODEX, "gemini": n.RUNTIME_GEMINI_CLI}


class SetupError(click.ClickException):
    pass


@dataclass(frozen=True)
class Options:
    """What to set up, and where the telemetry and the snapshots go."""

    runtime: str  # claude-code | codex | gemini
    home: Path
    project: Path | None  # None: per user
    endpoint: str = "http://127.0.0.1:4318"  # OTLP/HTTP base URL of otel-inputs collect
    grpc_endpoint: str = "http://127.0.0.1:4317"
    protocol: str = "http"  # http | grpc: how the runtime's own exporter sends
    store: Path = Path()
    raw_bodies: str = "inline"  # Claude Code only: inline | file | off
    python: str = sys.executable
    codex_home: Path | None = None


@dataclass
class Plan:
    """The files setup (or undo) writes, in order, and what it turns on."""

    writes: dict[Path, str | None] = field(default_factory=dict)  # None: remove the file
    switches: list[tuple[str, str]] = field(default_factory=list)  # (switch, what it sends)
    notes: list[str] = field(default_factory=list)


# --- shared pieces --------------------------------------------------------------------------------


def entry_path() -> Path:
    """The hook entry file of the installed otel_inputs (found without importing the hooks package)."""
    spec = importlib.util.find_spec("otel_inputs.hooks")
    if spec is None or spec.origin is None:
        raise SetupError("otel_inputs.hooks is not installed with this otel-inputs")
    return Path(spec.origin).parent / "entry.py"


def bodies_dir(opts: Options) -> Path:
    """Where Claude Code writes whole request bodies with --raw-bodies file (beside the store)."""
    return opts.store.parent / "claude-code-bodies"


def hook_command(opts: Options) -> str:
    """The command a runtime runs: the stdlib-only entry, by path, in isolated mode without site."""
    parts = [opts.python, "-I", "-S", str(entry_path()), "--runtime", RUNTIME_NAMES[opts.runtime],
             "--store", str(opts.store), "--endpoint", opts.endpoint, "--python", opts.python]  # fmt: skip
    if opts.runtime == "claude-code" and opts.raw_bodies == "file":
        parts += ["--bodies-dir", str(bodies_dir(opts))]
    return " ".join(shlex.quote(p) for p in parts)


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, Mapping) and HOOK_MARK in str(hook.get("command", ""))


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise SetupError(f"{path} is not valid JSON ({exc}); fix it or set up by hand (docs/coding-agents.md)") from exc
    if not isinstance(doc, dict):
        raise SetupError(f"{path} does not hold a JSON object")
    return doc


def _dump(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _add_hooks(settings: dict[str, Any], events: tuple[str, ...], command: str, timeout: int) -> None:
    """Append our command hook under each event, replacing an earlier otel-inputs hook (never another)."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SetupError("the settings' \"hooks\" is not an object; set up by hand (docs/coding-agents.md)")
    for event in events:
        groups = [g for g in hooks.get(event) or [] if isinstance(g, dict)]
        for g in groups:
            g["hooks"] = [h for h in g.get("hooks") or [] if not _is_ours(h)]
        groups = [g for g in groups if g.get("hooks")]
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
        hooks[event] = groups


def _remove_hooks(settings: dict[str, Any]) -> None:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = [g for g in hooks.get(event) or [] if isinstance(g, dict)]
        for g in groups:
            g["hooks"] = [h for h in g.get("hooks") or [] if not _is_ours(h)]
        kept = [g for g in groups if g.get("hooks")]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]


def _json_setup(path: Path, plan: Plan, changes: Mapping[str, Any], merge_key: str | None,
                events: tuple[str, ...], command: str, timeout: int) -> None:
    """Set ``changes`` (top-level keys, or keys under ``merge_key``) and the hooks in a JSON settings
    file, keeping every previous value in the sidecar for --undo (a second setup keeps the first's)."""
    settings = _read_json(path)
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    saved: dict[str, Any] = _read_json(sidecar) if sidecar.exists() else {"created": not path.exists(), "previous": {}}
    target = settings.setdefault(merge_key, {}) if merge_key else settings
    if not isinstance(target, dict):
        raise SetupError(f"{path}: \"{merge_key}\" is not an object; set up by hand (docs/coding-agents.md)")
    for key, value in changes.items():
        saved["previous"].setdefault(key, target.get(key))
        target[key] = value
    saved["merge_key"] = merge_key
    _add_hooks(settings, events, command, timeout)
    plan.writes[path] = _dump(settings)
    plan.writes[sidecar] = _dump(saved)


def _json_undo(path: Path, plan: Plan) -> None:
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if not path.exists() and not sidecar.exists():
        return
    settings = _read_json(path)
    saved = _read_json(sidecar) if sidecar.exists() else {"previous": {}}
    merge_key = saved.get("merge_key")
    target = settings.get(merge_key, {}) if merge_key else settings
    if isinstance(target, dict):
        for key, value in (saved.get("previous") or {}).items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
        if merge_key and not target:
            settings.pop(merge_key, None)
    _remove_hooks(settings)
    plan.writes[path] = None if (saved.get("created") and not settings) else _dump(settings)
    if sidecar.exists():
        plan.writes[sidecar] = None


# --- Claude Code ----------------------------------------------------------------------------------


def claude_plan(opts: Options, undo: bool = False) -> Plan:
    base = opts.project / ".claude" if opts.project else opts.home / ".claude"
    path = base / "settings.json"
    plan = Plan()
    if undo:
        _json_undo(path, plan)
        return plan
    protocol = "grpc" if opts.protocol == "grpc" else "http/protobuf"
    endpoint = opts.grpc_endpoint if opts.protocol == "grpc" else opts.endpoint
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_LOG_USER_PROMPTS": "1",
        "OTEL_LOG_TOOL_DETAILS": "1",
    }
    plan.switches += [
        ("CLAUDE_CODE_ENABLE_TELEMETRY=1, CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1",
         "Claude Code's own spans (claude_code.interaction per turn, llm_request, tool) and events"),
        ("OTEL_LOG_USER_PROMPTS=1", "the text of each prompt (span user_prompt, event user_prompt)"),
        ("OTEL_LOG_TOOL_DETAILS=1", "tool arguments: the file_path a Read/Edit/Write used, commands run"),
    ]
    if opts.raw_bodies == "inline":
        env["OTEL_LOG_RAW_API_BODIES"] = "1"
        plan.switches.append(("OTEL_LOG_RAW_API_BODIES=1", "every model request and response body, cut at 60 KB "
                              "(a longer request is recorded as partial)"))
    elif opts.raw_bodies == "file":
        bodies = bodies_dir(opts)
        env["OTEL_LOG_RAW_API_BODIES"] = f"file:{bodies}"
        plan.switches.append((f"OTEL_LOG_RAW_API_BODIES=file:{bodies}", "every model request and response body, "
                              "whole, written to that directory (the event carries its path, not the body)"))
    _json_setup(path, plan, env, "env", CLAUDE_HOOK_EVENTS, hook_command(opts), 10)
    plan.notes.append("hooks: UserPromptSubmit, InstructionsLoaded and Stop run the otel-inputs hook "
                      "(instruction-file snapshots; Claude Code's own report of which files it loaded; with "
                      "--raw-bodies file, the turn's request bodies read into the store at its end)")
    return plan


# --- Gemini CLI -----------------------------------------------------------------------------------


def gemini_plan(opts: Options, undo: bool = False) -> Plan:
    base = opts.project / ".gemini" if opts.project else opts.home / ".gemini"
    path = base / "settings.json"
    plan = Plan()
    if undo:
        _json_undo(path, plan)
        return plan
    telemetry = {
        "enabled": True,
        "target": "local",
        "otlpEndpoint": opts.grpc_endpoint if opts.protocol == "grpc" else opts.endpoint,
        "otlpProtocol": "grpc" if opts.protocol == "grpc" else "http",
        "logPrompts": True,
        "traces": True,
    }
    _json_setup(path, plan, telemetry, "telemetry", GEMINI_HOOK_EVENTS, hook_command(opts), 10000)
    plan.switches += [
        ("telemetry.enabled, target local, otlpEndpoint", "Gemini CLI's own spans (llm_call, tool_call) and events"),
        ("telemetry.logPrompts", "prompt text, and with traces the request messages (GEMINI.md inside them)"),
        ("telemetry.traces", "the request messages and system instructions on each llm_call span"),
    ]
    plan.notes.append("hooks: BeforeAgent runs the otel-inputs hook (instruction-file snapshots)")
    return plan


# --- Codex CLI ------------------------------------------------------------------------------------


def _codex_home(opts: Options) -> Path:
    if opts.project:
        return opts.project / ".codex"
    return opts.codex_home or opts.home / ".codex"


def _strip_block(text: str) -> str:
    if TOML_BEGIN not in text:
        return text
    head, _, rest = text.partition(TOML_BEGIN)
    _, _, tail = rest.partition(TOML_END)
    return head.rstrip("\n") + ("\n" if head.strip() else "") + tail.lstrip("\n")


def codex_block(opts: Options) -> str:
    if opts.protocol == "grpc":
        logs = traces = f'{{ otlp-grpc = {{ endpoint = "{opts.grpc_endpoint}" }} }}'
    else:
        logs = f'{{ otlp-http = {{ endpoint = "{opts.endpoint}/v1/logs", protocol = "binary" }} }}'
        traces = f'{{ otlp-http = {{ endpoint = "{opts.endpoint}/v1/traces", protocol = "binary" }} }}'
    return "\n".join([TOML_BEGIN, "[otel]", "log_user_prompt = true", f"exporter = {logs}",
                      f"trace_exporter = {traces}", 'metrics_exporter = "none"', TOML_END, ""])  # fmt: skip


def codex_plan(opts: Options, undo: bool = False) -> Plan:
    home = _codex_home(opts)
    config, hooks = home / "config.toml", home / "hooks.json"
    plan = Plan()
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    rest = _strip_block(text)
    if undo:
        if TOML_BEGIN in text:
            plan.writes[config] = rest if rest.strip() else None
        _json_undo(hooks, plan)
        return plan
    try:
        existing = tomllib.loads(rest)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{config} is not valid TOML ({exc}); fix it or set up by hand") from exc
    if "otel" in existing:
        raise SetupError(f"{config} already has an [otel] table; otel-inputs will not change it. Point its "
                         f"exporter and trace_exporter at {opts.endpoint} by hand (docs/coding-agents.md)")
    plan.writes[config] = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + codex_block(opts)
    _json_setup(hooks, plan, {}, None, CODEX_HOOK_EVENTS, hook_command(opts), 10)
    plan.switches += [
        ("[otel] exporter, trace_exporter", "Codex's own spans (session_task.turn, handle_responses, exec_command) "
         "and events (tool results with arguments and output are sent by Codex whenever [otel] is on)"),
        ("[otel] log_user_prompt = true", "the text of each prompt (codex.user_prompt)"),
    ]
    plan.notes += [
        "hooks: UserPromptSubmit runs the otel-inputs hook (AGENTS.md snapshots; Codex itself reports no "
        "instruction-file loads and no request messages)",
        "Codex runs a new hook only once you trust it: approve it in Codex (/hooks), or run `codex exec` with "
        "--dangerously-bypass-hook-trust in automation that vets its hooks",
    ]
    return plan


PLANNERS = {"claude-code": claude_plan, "codex": codex_plan, "gemini": gemini_plan}


def plan_for(opts: Options, undo: bool = False) -> Plan:
    return PLANNERS[opts.runtime](opts, undo)


def apply(plan: Plan) -> list[str]:
    """Write (or remove) every planned file, each atomically; returns one line per file."""
    done: list[str] = []
    for path, text in plan.writes.items():
        if text is None:
            if path.exists():
                path.unlink()
                done.append(f"removed  {path}")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        done.append(f"wrote    {path}")
    return done


@click.command("setup")
@click.argument("runtime", type=click.Choice(sorted(PLANNERS)))
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Set up for this project (its .claude/, .gemini/ or .codex/); default: for the user.")
@click.option("--user", "user", is_flag=True, help="Set up for the user (the default).")
@click.option("--endpoint", default="http://127.0.0.1:4318", show_default=True,
              help="OTLP/HTTP base URL of `otel-inputs collect` (the hooks always send here).")
@click.option("--grpc-endpoint", default="http://127.0.0.1:4317", show_default=True,
              help="OTLP/gRPC endpoint of `otel-inputs collect`, used with --protocol grpc.")
@click.option("--protocol", type=click.Choice(["http", "grpc"]), default="http", show_default=True,
              help="How the runtime's own exporter sends.")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=f"Artifact store for instruction-file snapshots (default ${n.ENV_STORE}, else ~/.otel-inputs/store).")
@click.option("--raw-bodies", type=click.Choice(["inline", "file", "off"]), default="inline", show_default=True,
              help="Claude Code: record model request bodies inline (cut at 60 KB), whole in files, or not.")
@click.option("--undo", is_flag=True, help="Remove what an earlier setup added.")
def setup(runtime: str, project: Path | None, user: bool, endpoint: str, grpc_endpoint: str, protocol: str,
          store: Path | None, raw_bodies: str, undo: bool) -> None:
    """Point a coding agent's own telemetry at `otel-inputs collect` and install the otel-inputs hooks."""
    if project is not None and user:
        raise SetupError("choose --project DIR or --user, not both")
    home = Path.home()
    store = (store or Path(os.environ.get(n.ENV_STORE) or home / ".otel-inputs" / "store")).resolve()
    codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else None
    opts = Options(runtime, home, project.resolve() if project else None, endpoint.rstrip("/"), grpc_endpoint,
                   protocol, store, raw_bodies, sys.executable, codex_home)  # fmt: skip
    plan = plan_for(opts, undo)
    for line in apply(plan):
        click.echo(line)
    if not plan.writes:
        click.echo("nothing to change")
    if undo:
        return
    click.echo(f"snapshots go to {store}; run `otel-inputs collect --store {store}` and "
               f"`otel-inputs view --store {store}` with it")
    click.echo("content switches turned on:")
    for switch, sends in plan.switches:
        click.echo(f"  {switch}: {sends}")
    for note in plan.notes:
        click.echo(note)


COMMANDS = (setup,)
