"""A pure-Python evaluator for the one OTTL shape collector-config uses, and nothing more.

Supported, exactly:

* a ``transform`` processor config whose only keys are ``error_mode`` and ``trace_statements``;
* ``trace_statements`` items of the form ``{context: span | spanevent, statements: [...]}``;
* statements ``delete_key(attributes, "<literal key>")`` with no ``where`` clause.

In ``span`` context the statement removes the key from the span's attributes; in ``spanevent``
context from every event's attributes (OTTL semantics: the statement runs once per span event).
Deleting an absent key is a no-op, as in OTTL.

Anything else -- another function, a condition, a path prefix, another context, another signal --
raises :class:`UnsupportedOTTL`. That is the point: if the vendor config grows beyond what this
evaluator understands, the tests fail instead of silently passing an unverified redaction.

Traces are OTLP/JSON-shaped dicts: ``resourceSpans[].scopeSpans[].spans[]`` with ``attributes``
as ``[{"key": ..., "value": {...}}]`` and ``events[].attributes`` likewise.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

SUPPORTED_CONTEXTS = ("span", "spanevent")
_DELETE_KEY = re.compile(r'^delete_key\(attributes, "((?:[^"\\])+)"\)$')


class UnsupportedOTTL(ValueError):
    """A statement, context or processor key outside the supported subset."""


@dataclass(frozen=True)
class Deletion:
    """One parsed ``delete_key(attributes, key)`` statement bound to its context."""

    context: str
    key: str


def parse_statement(context: str, statement: str) -> Deletion:
    """Parse one statement, or raise :class:`UnsupportedOTTL`."""
    if context not in SUPPORTED_CONTEXTS:
        raise UnsupportedOTTL(f"unsupported OTTL context {context!r}")
    if not isinstance(statement, str):
        raise UnsupportedOTTL(f"statement is not a string: {statement!r}")
    match = _DELETE_KEY.match(statement.strip())
    if match is None:
        raise UnsupportedOTTL(f"unsupported OTTL statement in {context} context: {statement!r}")
    return Deletion(context, match.group(1))


def parse_transform(processor_config: dict) -> list[Deletion]:
    """Parse a transform processor config into its deletions, in order."""
    if not isinstance(processor_config, dict):
        raise UnsupportedOTTL("transform config must be a mapping")
    extra = set(processor_config) - {"error_mode", "trace_statements"}
    if extra:
        raise UnsupportedOTTL(f"unsupported transform keys: {sorted(extra)}")
    groups = processor_config.get("trace_statements")
    if not isinstance(groups, list) or not groups:
        raise UnsupportedOTTL("trace_statements must be a non-empty list")
    deletions: list[Deletion] = []
    for group in groups:
        if not isinstance(group, dict):
            raise UnsupportedOTTL(f"only the context/statements form is supported: {group!r}")
        extra = set(group) - {"context", "statements"}
        if extra:
            raise UnsupportedOTTL(f"unsupported statement-group keys: {sorted(extra)}")
        statements = group.get("statements")
        if not isinstance(statements, list) or not statements:
            raise UnsupportedOTTL("statements must be a non-empty list")
        for statement in statements:
            deletions.append(parse_statement(group.get("context"), statement))
    return deletions


def _delete(attributes: list[dict] | None, key: str) -> list[dict] | None:
    if attributes is None:
        return None
    return [kv for kv in attributes if kv.get("key") != key]


def apply_transform(processor_config: dict, traces: dict) -> dict:
    """Return a copy of ``traces`` with the processor's statements applied."""
    deletions = parse_transform(processor_config)
    out = copy.deepcopy(traces)
    for resource_spans in out.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                # The processor runs each statement group in order; within a group, statement by
                # statement. Deletions commute, so applying them in list order is equivalent.
                for deletion in deletions:
                    if deletion.context == "span":
                        span["attributes"] = _delete(span.get("attributes"), deletion.key)
                    else:
                        for event in span.get("events", []):
                            event["attributes"] = _delete(event.get("attributes"), deletion.key)
    return out
