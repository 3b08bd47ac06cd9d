"""Was it read?  For each path-reference item, the attempt's tool steps whose arguments name its path.

A tool call counts as a read when its tool name is in the *read-tool mapping* and one of the
mapped argument names holds the item's path.  The defaults cover common read/open/cat/view tools
(:data:`DEFAULT_READ_TOOLS`); ``OTEL_INPUTS_READ_TOOLS`` adds to or overrides them with a JSON
object ``{"tool name": "argument" | ["argument", ...] | null}`` (``null`` removes a default), given
inline or as the path of a JSON file.  Tool names match exactly, then case-insensitively.

Paths match when equal after normalisation, or when the argument is relative and the item's path
ends with it on a path-segment boundary (agents often pass paths relative to their work folder).

Three answers, never conflated:

* read — "read by <tool> at <time>" for each matching tool step;
* no recorded read — tool steps were recorded and none of the read tools named this path;
* reads not recorded — the attempt has no recorded tool steps (or no steps table at all), so
  nothing can be said; this never reads as "not read".

A read tool whose arguments were not recorded (content not admitted) makes a non-match
"unknown" instead of "no recorded read".
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from otel_inputs import names
from otel_inputs.types import DeliveryMode
from otel_inputs.viewer._format import clock_text
from otel_inputs.viewer._records import InputRecord, StepRecord

DEFAULT_READ_TOOLS: dict[str, tuple[str, ...]] = {
    "read": ("path", "file_path", "filename"),
    "Read": ("file_path", "path"),
    "read_file": ("path", "file_path", "target_file", "filename"),
    "readFile": ("path", "filePath"),
    "open": ("path", "file", "filename"),
    "open_file": ("path", "file_path", "file"),
    "cat": ("path", "file", "filename"),
    "view": ("path", "file_path"),
    "view_file": ("path", "file_path"),
    "get_file_contents": ("path",),
}
"""Tool name -> the argument names that may hold the path it reads."""

TOOL_CALL = "tool_call"


class ReadState(str, Enum):
    READ = "read"
    NOT_READ = "no recorded read"
    UNKNOWN = "unknown"
    NOT_RECORDED = "reads not recorded"


@dataclass(frozen=True)
class ReadFinding:
    state: ReadState
    text: str
    reads: tuple[tuple[str, int | None], ...] = ()
    """(tool name, start ns) of every matching tool step."""


@dataclass(frozen=True)
class ReadTools:
    tools: dict[str, tuple[str, ...]]
    problem: str | None = None
    """Why the configured mapping was ignored (the defaults are then used), for the page."""

    def arguments_for(self, tool: str | None) -> tuple[str, ...] | None:
        if not tool:
            return None
        if tool in self.tools:
            return self.tools[tool]
        low = tool.lower()
        for name, args in self.tools.items():
            if name.lower() == low:
                return args
        return None


def load_read_tools(env: Mapping[str, str] | None = None) -> ReadTools:
    """The defaults with ``OTEL_INPUTS_READ_TOOLS`` (inline JSON or a JSON file path) laid over them."""
    raw = (env if env is not None else os.environ).get(names.ENV_READ_TOOLS, "").strip()
    tools = dict(DEFAULT_READ_TOOLS)
    if not raw:
        return ReadTools(tools)
    try:
        text = raw if raw.startswith("{") else Path(raw).read_text(encoding="utf-8")
        config = json.loads(text)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
        for tool, args in config.items():
            if args is None or args == []:
                tools.pop(str(tool), None)
            elif isinstance(args, str):
                tools[str(tool)] = (args,)
            elif isinstance(args, list) and all(isinstance(a, str) for a in args):
                tools[str(tool)] = tuple(args)
            else:
                raise ValueError(f"the value for {tool!r} is not a string, a list of strings or null")
    except (OSError, ValueError) as exc:
        return ReadTools(dict(DEFAULT_READ_TOOLS), f"{names.ENV_READ_TOOLS} ignored ({exc}); using the defaults")
    return ReadTools(tools)


def _norm(path: str) -> str:
    p = path.strip()
    if p.startswith("file://"):
        p = p[len("file://"):]
    return posixpath.normpath(p) if p else p


def path_matches(argument: str, source_path: str) -> bool:
    """True when a tool argument names ``source_path`` (equal, or a relative tail of it)."""
    arg, src = _norm(argument), _norm(source_path)
    if not arg or not src or arg == ".":
        return False
    if arg == src:
        return True
    return not arg.startswith("/") and src.endswith("/" + arg)


def _argument_values(arguments: str, keys: tuple[str, ...]) -> list[str]:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return []
    if not isinstance(parsed, dict):
        return []
    out = []
    for k in keys:
        v = parsed.get(k)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, str))
    return out


def find_reads(item: InputRecord, steps: tuple[StepRecord, ...] | None, tools: ReadTools) -> ReadFinding | None:
    """Whether ``item`` (a path reference) was read by a recorded tool step; ``None`` for other items."""
    if item.delivery_mode != DeliveryMode.PATH_REFERENCE.value or not item.source_path:
        return None
    tool_steps = [s for s in steps or () if s.step_kind == TOOL_CALL]
    if not tool_steps:
        return ReadFinding(ReadState.NOT_RECORDED, "reads not recorded (no tool steps recorded for this attempt)")
    reads: list[tuple[str, int | None]] = []
    blind = 0
    for s in tool_steps:
        keys = tools.arguments_for(s.tool_name)
        if keys is None:
            continue
        if s.tool_arguments is None:
            blind += 1
            continue
        if any(path_matches(v, item.source_path) for v in _argument_values(s.tool_arguments, keys)):
            reads.append((s.tool_name or "", s.started_ns))
    if reads:
        text = "; ".join(f"read by {tool} at {clock_text(ns)}" for tool, ns in reads)
        return ReadFinding(ReadState.READ, text, tuple(reads))
    if blind:
        return ReadFinding(ReadState.UNKNOWN,
                           f"unknown: {blind} read-tool call(s) without recorded arguments")
    return ReadFinding(ReadState.NOT_READ, "no recorded read")
