"""A pure-Python evaluator for the OTTL shapes collector-config uses, and nothing more.

Supported, exactly, in a ``transform`` processor whose only keys are ``error_mode``,
``trace_statements`` and ``log_statements``, each a list of ``{context, statements}`` groups:

* contexts ``resource``, ``span``, ``spanevent`` (traces) and ``resource``, ``log`` (logs);
* ``keep_keys(attributes, ["<key>", ...])``;
* ``set(attributes["<key>"], "<literal>")``;
* ``set(attributes["<key>"], SHA256(Concat(["<literal>", attributes["<key2>"]], "")))``
  with the clause ``where attributes["<key2>"] != nil and Len("<literal>") >= <int>``
  (the keyed digest of vendor.yaml; the clause may be left out);
* ``set(status.message, "")`` in span context and ``set(body, "")`` in log context.

Collector-style ``${env:NAME}`` / ``${env:NAME:-default}`` references inside statements are
expanded first from the ``env`` mapping given, as the Collector expands them before OTTL parses.

In ``spanevent`` context a statement runs once per span event; in ``resource`` context once per
resource.  Statements run in order (OTTL semantics).  Anything else -- another function, another
condition, a path prefix, another context or processor key -- raises :class:`UnsupportedOTTL`.
That is the point: if the vendor config grows beyond what this evaluator understands, the tests
fail instead of silently passing an unverified redaction.

Data is OTLP/JSON-shaped: ``resourceSpans[].scopeSpans[].spans[]`` with ``attributes`` as
``[{"key": ..., "value": {...}}]`` (events likewise), and ``resourceLogs[].scopeLogs[].logRecords[]``.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TRACE_CONTEXTS = ("resource", "span", "spanevent")
LOG_CONTEXTS = ("resource", "log")

_KEY = r'"((?:[^"\\])+)"'
_ENV = re.compile(r"\$\{env:([A-Z][A-Z0-9_]*)(?::-([^}]*))?\}")
_KEEP_KEYS = re.compile(rf"^keep_keys\(attributes, \[\s*((?:{_KEY}\s*,?\s*)*)\]\)$")
_SET_LITERAL = re.compile(rf'^set\(attributes\[{_KEY}\], "([^"\\]*)"\)$')
_SET_KEYED = re.compile(
    rf'^set\(attributes\[{_KEY}\], SHA256\(Concat\(\["([^"\\]*)", attributes\[{_KEY}\]\], ""\)\)\)'
    rf'(?: where attributes\[{_KEY}\] != nil and Len\("([^"\\]*)"\) >= (\d+))?$'
)
_CLEAR = {"span": 'set(status.message, "")', "log": 'set(body, "")'}


class UnsupportedOTTL(ValueError):
    """A statement, context or processor key outside the supported subset."""


@dataclass(frozen=True)
class Statement:
    """One parsed statement bound to its signal and context."""

    signal: str  # "traces" | "logs"
    context: str
    op: str  # keep_keys | set_literal | set_keyed_sha256 | clear
    key: str = ""
    keys: tuple[str, ...] = ()
    literal: str = ""
    source: str = ""
    guard: tuple[str, int] | None = field(default=None)  # (literal whose Len is tested, minimum)


def expand_env(text: str, env: Mapping[str, str]) -> str:
    return _ENV.sub(lambda m: env.get(m.group(1), m.group(2) or ""), text)


def parse_statement(signal: str, context: str, statement: str, env: Mapping[str, str]) -> Statement:
    """Parse one statement, or raise :class:`UnsupportedOTTL`."""
    allowed = TRACE_CONTEXTS if signal == "traces" else LOG_CONTEXTS
    if context not in allowed:
        raise UnsupportedOTTL(f"unsupported OTTL context {context!r} for {signal}")
    if not isinstance(statement, str):
        raise UnsupportedOTTL(f"statement is not a string: {statement!r}")
    text = expand_env(statement.strip(), env)
    if m := _KEEP_KEYS.match(text):
        keys = tuple(re.findall(_KEY, m.group(1)))
        if not keys:
            raise UnsupportedOTTL("keep_keys needs at least one key")
        return Statement(signal, context, "keep_keys", keys=keys)
    if m := _SET_LITERAL.match(text):
        return Statement(signal, context, "set_literal", key=m.group(1), literal=m.group(2))
    if m := _SET_KEYED.match(text):
        target, secret, source, cond_key, cond_literal, minimum = m.groups()
        if cond_key is not None and (cond_key != source or cond_literal != secret):
            raise UnsupportedOTTL(f"the where clause must test the digested key and the secret: {statement!r}")
        guard = (cond_literal, int(minimum)) if cond_key is not None else None
        return Statement(signal, context, "set_keyed_sha256", key=target, literal=secret, source=source, guard=guard)
    if _CLEAR.get(context) == text:
        return Statement(signal, context, "clear")
    raise UnsupportedOTTL(f"unsupported OTTL statement in {context} context: {statement!r}")


def parse_transform(processor_config: dict, env: Mapping[str, str] | None = None) -> list[Statement]:
    """Parse a transform processor config into its statements, in order."""
    env = env or {}
    if not isinstance(processor_config, dict):
        raise UnsupportedOTTL("transform config must be a mapping")
    extra = set(processor_config) - {"error_mode", "trace_statements", "log_statements"}
    if extra:
        raise UnsupportedOTTL(f"unsupported transform keys: {sorted(extra)}")
    if processor_config.get("error_mode", "propagate") != "propagate":
        raise UnsupportedOTTL("only error_mode: propagate is evaluated (a failing statement must refuse the batch)")
    out: list[Statement] = []
    for signal, key in (("traces", "trace_statements"), ("logs", "log_statements")):
        if key not in processor_config:
            continue
        groups = processor_config[key]
        if not isinstance(groups, list) or not groups:
            raise UnsupportedOTTL(f"{key} must be a non-empty list")
        for group in groups:
            if not isinstance(group, dict):
                raise UnsupportedOTTL(f"only the context/statements form is supported: {group!r}")
            extra = set(group) - {"context", "statements"}
            if extra:
                raise UnsupportedOTTL(f"unsupported statement-group keys: {sorted(extra)}")
            statements = group.get("statements")
            if not isinstance(statements, list) or not statements:
                raise UnsupportedOTTL("statements must be a non-empty list")
            out += [parse_statement(signal, group.get("context"), s, env) for s in statements]
    if not out:
        raise UnsupportedOTTL("no statements")
    return out


def _get(attributes: list[dict], key: str) -> dict | None:
    for kv in attributes:
        if kv.get("key") == key:
            return kv.get("value")
    return None


def _set(attributes: list[dict], key: str, value: dict) -> list[dict]:
    return [kv for kv in attributes if kv.get("key") != key] + [{"key": key, "value": value}]


def _scalar_string(value: dict | None) -> str | None:
    """OTTL's Concat stringifies primitive values and skips maps and lists."""
    if value is None:
        return None
    for kind in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if kind in value:
            v = value[kind]
            return ("true" if v else "false") if kind == "boolValue" else str(v)
    return ""


def _apply(st: Statement, holder: dict, field_name: str) -> None:
    """Apply one statement to ``holder`` (a span, event, log record or resource)."""
    attrs = holder.get("attributes") or []
    if st.op == "keep_keys":
        holder["attributes"] = [kv for kv in attrs if kv.get("key") in st.keys]
    elif st.op == "set_literal":
        holder["attributes"] = _set(attrs, st.key, {"stringValue": st.literal})
    elif st.op == "set_keyed_sha256":
        source = _get(attrs, st.source)
        if st.guard is not None and (source is None or len(st.guard[0]) < st.guard[1]):
            return
        digest = hashlib.sha256((st.literal + (_scalar_string(source) or "")).encode("utf-8")).hexdigest()
        holder["attributes"] = _set(attrs, st.key, {"stringValue": digest})
    elif st.op == "clear":
        if field_name == "span":
            holder.setdefault("status", {})["message"] = ""
        else:
            holder["body"] = {"stringValue": ""}


def apply_transform(processor_config: dict, data: dict, env: Mapping[str, str] | None = None) -> dict:
    """Return a copy of ``data`` (traces and/or logs, OTLP/JSON) with the processor's statements applied."""
    statements = parse_transform(processor_config, env)
    out = copy.deepcopy(data)
    visit: dict[tuple[str, str], Callable[[dict], list[dict]]] = {
        ("traces", "resource"): lambda rs: [rs.setdefault("resource", {})],
        ("traces", "span"): lambda rs: [s for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])],
        ("traces", "spanevent"): lambda rs: [e for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])
                                             for e in s.get("events", [])],
        ("logs", "resource"): lambda rl: [rl.setdefault("resource", {})],
        ("logs", "log"): lambda rl: [r for sl in rl.get("scopeLogs", []) for r in sl.get("logRecords", [])],
    }
    roots = {"traces": out.get("resourceSpans", []), "logs": out.get("resourceLogs", [])}
    for st in statements:
        for root in roots[st.signal]:
            for holder in visit[(st.signal, st.context)](root):
                _apply(st, holder, st.context)
    return out
