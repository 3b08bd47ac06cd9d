"""vendor.yaml's allowlist redaction, applied to spans and log records in the shape of every client we read.

Every content value in the samples contains the marker ``SECRET``; after redaction no string anywhere
in the data (resource, span, span event, status, log attribute, log body) may contain it, and no plain
SHA-256 value may survive.  The facts (ids, lineage, counts, statuses, sizes, models, tokens) must.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from otel_inputs import names as n

from .ottl_subset import UnsupportedOTTL, apply_transform, parse_transform

VENDOR = Path(__file__).resolve().parents[2] / "collector-config" / "vendor.yaml"
KEY = "k" * 16 + "0123456789abcdef0123456789abcdef"  # a local secret, >= 32 characters
ENV = {n.ENV_EXPORT_DIGEST_KEY: KEY}
TASK_SHA, INPUT_SHA, PART_SHA = "a" * 64, "b" * 64, "c" * 64


def transform() -> dict:
    config = yaml.safe_load(VENDOR.read_text(encoding="utf-8"))
    (pid,) = [p for p in config["processors"] if p.split("/")[0] == "transform"]
    return config["processors"][pid]


def kept(signal: str, context: str) -> set[str]:
    return {k for st in parse_transform(transform(), ENV) if (st.signal, st.context) == (signal, context)
            for k in st.keys}


# Every dotted name in names.py is decided: kept as a fact somewhere, or never sent to a vendor.
NEVER_SENT = {
    # content, paths and labels
    n.TASK_PROMPT, n.TASK_SOURCE_PATH, n.INPUT_LABEL, n.INPUT_SOURCE_PATH, n.INPUT_DETAIL, n.PART_DETAIL,
    n.GEN_AI_SYSTEM_INSTRUCTIONS, n.GEN_AI_INPUT_MESSAGES, n.GEN_AI_OUTPUT_MESSAGES, n.GEN_AI_PROMPT,
    n.OPENINFERENCE_INPUT_VALUE, n.OPENINFERENCE_OUTPUT_VALUE, n.OPENINFERENCE_INPUT_MESSAGES,
    n.OPENINFERENCE_MESSAGE_ROLE, n.OPENINFERENCE_MESSAGE_CONTENT, n.OPENINFERENCE_METADATA,
    n.OPENINFERENCE_INPUT_MIME_TYPE, n.OPENINFERENCE_OUTPUT_MIME_TYPE,
    n.LANGFUSE_OBSERVATION_INPUT, n.LANGFUSE_OBSERVATION_OUTPUT, n.LANGFUSE_OBSERVATION_METADATA,
    n.GEN_AI_TOOL_CALL_ARGUMENTS, n.OPENLLMETRY_PROMPT_PREFIX, n.OPENLLMETRY_COMPLETION_PREFIX,
    n.OPENINFERENCE_TOOL_PARAMETERS, n.PYDANTIC_AI_ALL_MESSAGES,
    # plain digests (a vendor could confirm a guess by hashing it) and the ref that embeds one
    n.TASK_SHA256, n.INPUT_SHA256, n.PART_SHA256, n.INPUT_SNAPSHOT_REF, n.STORE_ITEM_SHA256,
    # where the store's bytes and catalog are: the team's infrastructure, for its own fleet viewer only
    n.STORE_OBJECTS_URL,
    # coding agents (docs/coding-agents.md): the hook's records go to the local `otel-inputs collect` only
    # (paths, prompt digests, gaps), and the runtimes' own keys are read, never written by otel-inputs
    n.HOOK_RUNTIME, n.HOOK_EVENT, n.HOOK_TURN_KEY, n.HOOK_PROCESS_KEY, n.HOOK_CAPTURE_ID, n.HOOK_PROMPT_SHA256,
    n.HOOK_PROMPT_LENGTH, n.HOOK_FILE_COUNT, n.HOOK_GAP, n.INSTRUCTION_DISCOVERY, n.INSTRUCTION_MEMORY_TYPE,
    n.INSTRUCTION_LOAD_REASON, n.REQUEST_BODY_REF, n.INSTRUCTION_DELIVERED, n.INSTRUCTION_DELIVERED_DETAIL,
    n.EVENT_SEQUENCE_ATTR, n.CLAUDE_PROMPT_ID, n.CODEX_TURN_ID, n.CODEX_CONVERSATION_ID, n.CODEX_TOOL_PHASE,
    n.GEMINI_TOOL_CALL_ID,
    # the Vercel AI SDK's own ai.* names (docs/encodings.md): not on the allowlist yet, so none leaves
    n.VERCEL_OPERATION_ID, n.VERCEL_PROMPT, n.VERCEL_PROMPT_MESSAGES, n.VERCEL_MODEL_ID, n.VERCEL_MODEL_PROVIDER,
    n.VERCEL_RESPONSE_MODEL, n.VERCEL_USAGE_INPUT_TOKENS, n.VERCEL_USAGE_OUTPUT_TOKENS, n.VERCEL_USAGE_PROMPT_TOKENS,
    n.VERCEL_USAGE_COMPLETION_TOKENS, n.VERCEL_TOOL_CALL_NAME, n.VERCEL_TOOL_CALL_ID, n.VERCEL_TOOL_CALL_ARGS,
    n.VERCEL_TOOL_CALL_INPUT, n.VERCEL_FUNCTION_ID, n.VERCEL_METADATA_SESSION_ID,
}
NOT_ATTRIBUTE_KEYS = {
    # event names, kept as names
    n.INPUT_EVENT, n.EXCHANGE_PART_EVENT, n.STORE_FACT_EVENT, n.EVENT_INFERENCE_DETAILS, n.EVENT_SYSTEM_MESSAGE, n.EVENT_USER_MESSAGE,
    n.EVENT_ASSISTANT_MESSAGE, n.EVENT_TOOL_MESSAGE, n.EVENT_CHOICE, n.EVENT_CONTENT_PROMPT,
    n.EXPORT_REDACTION,  # written by the pipeline itself
    n.LINK_KIND,  # link attributes: no OTTL context reaches links; ours holds only an enum
    # coding agents: the hook's event names, and the span and event names the runtimes send
    n.HOOK_TURN_EVENT, n.INSTRUCTION_FILE_EVENT, n.REQUEST_BODY_EVENT, n.CLAUDE_SPAN_INTERACTION,
    n.CLAUDE_SPAN_LLM_REQUEST, n.CLAUDE_SPAN_TOOL, n.CODEX_SPAN_TURN, n.CODEX_EVENT_USER_PROMPT,
    n.CODEX_EVENT_TOOL_RESULT, n.GEMINI_EVENT_USER_PROMPT, n.GEMINI_EVENT_API_REQUEST, n.GEMINI_EVENT_TOOL_CALL,
    n.VERCEL_TOOL_CALL_OPERATION,  # a value of ai.operationId (and a span name)
}


def wire_names() -> set[str]:
    return {v for k, v in vars(n).items() if k.isupper() and isinstance(v, str) and "." in v
            and not k.startswith(("ENV_", "SENTENCE_"))}


def test_every_registry_name_is_decided():
    """Each dotted name in names.py is either on an allowlist or explicitly never sent; none is both."""
    allowed = kept("traces", "span") | kept("traces", "spanevent") | kept("logs", "log")
    undecided = wire_names() - allowed - NEVER_SENT - NOT_ATTRIBUTE_KEYS
    assert undecided == set(), f"decide for each: keep as a fact in vendor.yaml, or add to NEVER_SENT: {undecided}"
    assert not allowed & NEVER_SENT


@pytest.mark.parametrize("context", [("traces", "resource"), ("traces", "span"), ("traces", "spanevent"),
                                     ("logs", "resource"), ("logs", "log")])
def test_allowlists_hold_no_content_shaped_key(context):
    """No kept key is a message, prompt, content, path, label, argument, result, value or plain digest."""
    shapes = ("message", "prompt", "content", "path", "label", "argument", "result", "value", "sha256", "body",
              "instructions", "completion", "input", "output", "metadata", "query", "command")
    # Facts whose last name part happens to be such a word: token counts and keyed digests.
    facts = {"llm.token_count.prompt", "llm.token_count.completion"}
    bad = {k for k in kept(*context) - facts if any(s in k.rsplit(".", 1)[-1] for s in shapes)
           and not k.endswith(("keyed_sha256", "_tokens"))}
    assert bad == set()


# --- samples in the shape of every client ---------------------------------------------------------

def anyvalue(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, list):
        return {"arrayValue": {"values": [anyvalue(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": anyvalue(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def attrs(d: dict) -> list[dict]:
    return [{"key": k, "value": anyvalue(v)} for k, v in d.items()]


def span(name, attributes, events=(), status_message=""):
    return {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": name, "kind": 1,
            "attributes": attrs(attributes), "status": {"code": 2 if status_message else 0, "message": status_message},
            "events": [{"name": en, "timeUnixNano": "1", "attributes": attrs(ea)} for en, ea in events]}


RESOURCE = {"service.name": "agent", "telemetry.sdk.language": "python",
            "process.command_line": "python agent.py --task 'SECRET task on the command line'",
            "host.name": "alice-laptop"}

OTEL_INPUTS_ATTEMPT = span("invoke_agent builder", {
    n.GEN_AI_OPERATION_NAME: "invoke_agent", n.PROVIDER_NAME: "openai", n.GEN_AI_REQUEST_MODEL: "gpt-x",
    n.GEN_AI_AGENT_NAME: "builder", n.GEN_AI_CONVERSATION_ID: "conv-1",
    n.GEN_AI_SYSTEM_INSTRUCTIONS: '[{"type":"text","content":"SECRET system"}]',
    n.GEN_AI_INPUT_MESSAGES: '[{"role":"user","parts":[{"type":"text","content":"SECRET user"}]}]',
    n.RUN_ID: "run-1", n.ATTEMPT_ID: "att-2", n.PHASE: "implement", n.SEND_KIND: "parse_retry", n.TURN_INDEX: 2,
    n.PREVIOUS_TURN_ATTEMPT_ID: "att-1", n.RETRY_OF_ATTEMPT_ID: "att-1",
    n.TASK_PROMPT: "SECRET fix the parser", n.TASK_SOURCE_KIND: "prompt_file",
    n.TASK_SOURCE_PATH: "/home/alice/SECRET_project/TASK.md", n.TASK_SIZE_BYTES: 52, n.TASK_SHA256: TASK_SHA,
    n.PACKET_VERSION_ATTR: 1, n.PACKET_COVERAGE: "partial", n.PACKET_DECLARED_COUNT: 3, n.PACKET_CAPTURED_COUNT: 1,
    n.PACKET_OMITTED_COUNT: 1, n.PACKET_ITEM_COUNT: 2, n.PACKET_GAP_REASON: "limit_exceeded",
    n.CAPTURE_DECISION: "admitted", n.CAPTURE_GAP_REASON: "limit_exceeded",
    # backend compatibility names (OTEL_INPUTS_BACKEND_COMPAT=phoenix,langfuse)
    n.OPENINFERENCE_SPAN_KIND: "AGENT", n.OPENINFERENCE_INPUT_VALUE: "SECRET fix the parser",
    n.OPENINFERENCE_INPUT_MIME_TYPE: "text/plain", n.OPENINFERENCE_OUTPUT_VALUE: "SECRET done",
    n.OPENINFERENCE_METADATA: '{"otel_inputs": {"inputs": [{"label": "SECRET label"}]}}',
    n.LANGFUSE_OBSERVATION_TYPE: "agent", n.LANGFUSE_OBSERVATION_INPUT: "SECRET fix the parser",
    f"{n.LANGFUSE_OBSERVATION_METADATA}.otel_inputs_packet": '{"inputs": [{"label": "SECRET label"}]}',
}, events=[
    (n.INPUT_EVENT, {n.INPUT_ID: "in-0", n.INPUT_SEQ: 0, n.INPUT_LABEL: "SECRET parser.py",
                     n.INPUT_SOURCE_KIND: "explicit_attachment", n.INPUT_DELIVERY_MODE: "path_reference",
                     n.INPUT_SOURCE_PATH: "/home/alice/SECRET_project/parser.py",
                     n.INPUT_SNAPSHOT_REF: f"sha256/{INPUT_SHA}", n.INPUT_MEDIA_TYPE: "text/x-python",
                     n.INPUT_PREVIEW_KIND: "text", n.INPUT_SIZE_BYTES: 1234, n.INPUT_SHA256: INPUT_SHA,
                     n.INPUT_CAPTURE_STATUS: "captured", n.INPUT_ARTIFACT_STATUS: "available",
                     n.INPUT_DETAIL: "SECRET detail"}),
    (n.EXCHANGE_PART_EVENT, {n.PART_NAME: "logical_request", n.PART_CAPTURE: "truncated",
                             n.PART_REASON: "limit_exceeded", n.PART_DISPATCH: "dispatched",
                             n.PART_REF: "part:k/logical_request", n.PART_SHA256: PART_SHA, n.PART_SIZE_BYTES: 999,
                             n.PART_PERSISTENCE: "queued", n.PART_DETAIL: "SECRET bound detail"}),
    ("exception", {"exception.type": "ValueError", "exception.message": "SECRET prompt quoted in an error",
                   "exception.stacktrace": "File agent.py ... SECRET"}),
], status_message="ValueError: SECRET prompt quoted in an error")

GENAI_CHAT_SPAN_ONLY = span("chat gpt-x", {  # opentelemetry-instrumentation-openai-v2 / util-genai, SPAN_ONLY
    n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai", n.GEN_AI_REQUEST_MODEL: "gpt-x",
    "gen_ai.response.model": "gpt-x-2026", "gen_ai.response.id": "chatcmpl-1",
    "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3,
    n.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": "SECRET question"}]}],
    n.GEN_AI_OUTPUT_MESSAGES: [{"role": "assistant", "parts": [{"type": "text", "content": "SECRET answer"}]}],
    n.GEN_AI_SYSTEM_INSTRUCTIONS: [{"type": "text", "content": "SECRET system"}],
    "server.address": "127.0.0.1", "server.port": 8000,
})

TOOL_SPAN = span("execute_tool read_file", {
    n.GEN_AI_OPERATION_NAME: "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call-1",
    "gen_ai.tool.call.arguments": '{"path": "/home/alice/SECRET.txt"}', "gen_ai.tool.call.result": "SECRET file body",
})

OPENINFERENCE_LLM = span("ChatCompletion", {
    n.OPENINFERENCE_SPAN_KIND: "LLM", "llm.system": "openai", "llm.provider": "openai",
    n.OPENINFERENCE_MODEL_NAME: "gpt-x", n.OPENINFERENCE_INPUT_VALUE: '{"messages": "SECRET"}',
    n.OPENINFERENCE_INPUT_MIME_TYPE: "application/json", n.OPENINFERENCE_OUTPUT_VALUE: "SECRET out",
    "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "SECRET system",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.contents.0.message_content.text": "SECRET user part",
    "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "SECRET reply",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"q": "SECRET"}',
    "llm.invocation_parameters": '{"temperature": 0, "user": "SECRET user id"}',
    "llm.token_count.prompt": 12, "llm.token_count.completion": 3, "llm.token_count.total": 15,
    n.OPENINFERENCE_SESSION_ID: "sess-9",
})

OPENLLMETRY_LLM = span("openai.chat", {
    n.GEN_AI_SYSTEM: "openai", "llm.request.type": "chat", n.GEN_AI_REQUEST_MODEL: "gpt-x",
    "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "SECRET prompt",
    "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "SECRET completion",
    "gen_ai.completion.0.tool_calls.0.arguments": '{"a": "SECRET"}',
    "gen_ai.usage.prompt_tokens": 12, "gen_ai.usage.completion_tokens": 3, "llm.usage.total_tokens": 15,
    "traceloop.entity.input": "SECRET entity input", "traceloop.entity.output": "SECRET entity output",
}, events=[("gen_ai.content.prompt", {n.GEN_AI_PROMPT: "SECRET event prompt"})])

PYDANTIC_AI_AGENT_RUN = span("invoke_agent agent", {
    n.GEN_AI_OPERATION_NAME: "invoke_agent", n.GEN_AI_AGENT_NAME: "agent", "agent_name": "agent",
    "model_name": "test", "gen_ai.usage.input_tokens": 51, "gen_ai.usage.output_tokens": 4,
    "pydantic_ai.all_messages": '[{"role": "user", "parts": [{"type": "text", "content": "SECRET run prompt"}]}]',
    "final_result": "SECRET final result", "logfire.msg": "agent run", "logfire.json_schema": '{"type": "object"}',
})


def log(event_name, attributes, body=None):
    record = {"timeUnixNano": "5", "eventName": event_name, "traceId": "0af7651916cd43dd8448eb211c80319c",
              "spanId": "b7ad6b7169203331", "severityNumber": 9, "attributes": attrs(attributes)}
    if body is not None:
        record["body"] = anyvalue(body)
    return record


LOGS = [
    # util-genai / openai-v2 EVENT_ONLY: the messages are structured log attributes
    log(n.EVENT_INFERENCE_DETAILS, {
        n.GEN_AI_OPERATION_NAME: "chat", n.GEN_AI_PROVIDER_NAME: "openai", n.GEN_AI_REQUEST_MODEL: "gpt-x",
        "gen_ai.response.id": "chatcmpl-1", "gen_ai.usage.input_tokens": 12,
        n.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": "SECRET question"}]}],
        n.GEN_AI_OUTPUT_MESSAGES: [{"role": "assistant", "parts": [{"type": "text", "content": "SECRET answer"}]}],
        n.GEN_AI_SYSTEM_INSTRUCTIONS: [{"type": "text", "content": "SECRET system"}],
    }),
    # otel-inputs' own operation.details event
    log(n.EVENT_INFERENCE_DETAILS, {n.GEN_AI_OPERATION_NAME: "invoke_agent", n.ATTEMPT_ID: "att-2",
                                          n.RUN_ID: "run-1",
                                          n.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [
                                              {"type": "text", "content": "SECRET user"}]}]}),
    # OpenLLMetry / older openai-v2 event mode: the content is in the body
    log("gen_ai.system.message", {n.GEN_AI_SYSTEM: "openai"}, body={"content": "SECRET system"}),
    log("gen_ai.user.message", {n.GEN_AI_SYSTEM: "openai"}, body={"content": "SECRET user"}),
    log("gen_ai.choice", {n.GEN_AI_SYSTEM: "openai"},
        body={"index": 0, "finish_reason": "stop", "message": {"content": "SECRET choice"}}),
    log("gen_ai.tool.message", {n.GEN_AI_SYSTEM: "openai", "gen_ai.tool.call.id": "call-1"},
        body={"content": "SECRET tool output", "id": "call-1"}),
    # a plain application log line that quotes the prompt
    log(None, {"code.filepath": "/home/alice/SECRET_project/agent.py"}, body="sending SECRET prompt"),
]

ALL_SPANS = [OTEL_INPUTS_ATTEMPT, GENAI_CHAT_SPAN_ONLY, TOOL_SPAN, OPENINFERENCE_LLM, OPENLLMETRY_LLM,
             PYDANTIC_AI_AGENT_RUN]


def sample() -> dict:
    return {
        "resourceSpans": [{"resource": {"attributes": attrs(RESOURCE)},
                           "scopeSpans": [{"scope": {"name": "any"}, "spans": ALL_SPANS}]}],
        "resourceLogs": [{"resource": {"attributes": attrs(RESOURCE)},
                          "scopeLogs": [{"scope": {"name": "any"}, "logRecords": LOGS}]}],
    }


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def as_dict(attributes) -> dict:
    return {a["key"]: a["value"] for a in attributes or []}


def out_spans(data):
    return [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def out_logs(data):
    return [r for rl in data["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


def test_no_content_marker_and_no_plain_digest_survives_for_any_client():
    """After redaction no string in any span, event, status, resource, log attribute or body holds content or a plain digest."""
    before = sample()
    assert sum("SECRET" in s for s in strings(before)) > 40, "the sample must carry content everywhere"
    after = apply_transform(transform(), before, ENV)
    assert before == sample(), "the evaluator must not mutate its input"
    leaked = [s for s in strings(after) if "SECRET" in s or any(d in s for d in (TASK_SHA, INPUT_SHA, PART_SHA))]
    assert leaked == []


def test_the_facts_survive():
    """Ids, lineage, counts, statuses, sizes, models, tokens, span/event/log names and correlation ids are kept."""
    after = apply_transform(transform(), sample(), ENV)
    attempt, chat, tool, oi, oll, pyd = out_spans(after)
    a = as_dict(attempt["attributes"])
    for key in (n.RUN_ID, n.ATTEMPT_ID, n.PHASE, n.SEND_KIND, n.TURN_INDEX, n.PREVIOUS_TURN_ATTEMPT_ID,
                n.RETRY_OF_ATTEMPT_ID, n.TASK_SOURCE_KIND, n.TASK_SIZE_BYTES, n.PACKET_VERSION_ATTR, n.PACKET_COVERAGE,
                n.PACKET_DECLARED_COUNT, n.PACKET_CAPTURED_COUNT, n.PACKET_OMITTED_COUNT, n.PACKET_ITEM_COUNT,
                n.PACKET_GAP_REASON, n.CAPTURE_DECISION, n.CAPTURE_GAP_REASON, n.PROVIDER_NAME, n.GEN_AI_REQUEST_MODEL,
                n.GEN_AI_AGENT_NAME, n.GEN_AI_CONVERSATION_ID, n.OPENINFERENCE_SPAN_KIND, n.LANGFUSE_OBSERVATION_TYPE):
        assert a[key] == as_dict(OTEL_INPUTS_ATTEMPT["attributes"])[key], key
    assert a[n.EXPORT_REDACTION] == {"stringValue": n.EXPORT_REDACTION_ALLOWLIST}
    assert [e["name"] for e in attempt["events"]] == [n.INPUT_EVENT, n.EXCHANGE_PART_EVENT, "exception"]
    item, part, exc = (as_dict(e["attributes"]) for e in attempt["events"])
    assert {n.INPUT_ID, n.INPUT_SEQ, n.INPUT_SIZE_BYTES, n.INPUT_CAPTURE_STATUS, n.INPUT_ARTIFACT_STATUS,
            n.INPUT_DELIVERY_MODE, n.INPUT_MEDIA_TYPE} <= set(item)
    assert {n.PART_NAME, n.PART_CAPTURE, n.PART_REASON, n.PART_DISPATCH, n.PART_SIZE_BYTES, n.PART_PERSISTENCE} <= set(part)
    assert exc == {"exception.type": {"stringValue": "ValueError"}}
    assert attempt["status"] == {"code": 2, "message": ""}  # the error stays an error, its text goes
    assert as_dict(chat["attributes"])["gen_ai.usage.input_tokens"] == {"intValue": "12"}
    assert as_dict(tool["attributes"])["gen_ai.tool.name"] == {"stringValue": "read_file"}
    assert as_dict(oi["attributes"])["llm.token_count.total"] == {"intValue": "15"}
    assert as_dict(oll["attributes"])["llm.request.type"] == {"stringValue": "chat"}
    assert as_dict(pyd["attributes"])["gen_ai.usage.output_tokens"] == {"intValue": "4"}
    assert [s["name"] for s in out_spans(after)] == [s["name"] for s in ALL_SPANS]
    logs = out_logs(after)
    assert [r["eventName"] for r in logs] == [r["eventName"] for r in LOGS]
    assert all(r["traceId"] and r["spanId"] and r["body"] == {"stringValue": ""} for r in logs)
    assert as_dict(logs[1]["attributes"])[n.ATTEMPT_ID] == {"stringValue": "att-2"}
    assert as_dict(after["resourceSpans"][0]["resource"]["attributes"]) == {
        "service.name": {"stringValue": "agent"}, "telemetry.sdk.language": {"stringValue": "python"}}


def test_digests_leaving_for_the_vendor_are_keyed_with_the_local_secret():
    """With the key set, each plain SHA-256 becomes SHA256(key ++ plain hex) under a keyed_sha256 name."""
    after = apply_transform(transform(), sample(), ENV)
    attempt = out_spans(after)[0]
    keyed = lambda plain: {"stringValue": hashlib.sha256((KEY + plain).encode()).hexdigest()}  # noqa: E731
    assert as_dict(attempt["attributes"])[n.TASK_KEYED_SHA256] == keyed(TASK_SHA)
    item, part, _ = (as_dict(e["attributes"]) for e in attempt["events"])
    assert item[n.INPUT_KEYED_SHA256] == keyed(INPUT_SHA) and part[n.PART_KEYED_SHA256] == keyed(PART_SHA)
    # Hashing a guess of the content gives the plain digest, which the vendor never sees.
    assert keyed(TASK_SHA) != {"stringValue": hashlib.sha256(TASK_SHA.encode()).hexdigest()}


@pytest.mark.parametrize("env", [{}, {n.ENV_EXPORT_DIGEST_KEY: ""}, {n.ENV_EXPORT_DIGEST_KEY: "short-key"}])
def test_without_a_long_enough_key_no_digest_leaves_at_all(env):
    """Unset, empty or short (< 32 characters) key: neither plain nor keyed digests are sent."""
    after = apply_transform(transform(), sample(), env)
    attempt = out_spans(after)[0]
    everything = [as_dict(attempt["attributes"])] + [as_dict(e["attributes"]) for e in attempt["events"]]
    assert not any(k.endswith("sha256") for d in everything for k in d)
    assert [s for s in strings(after) if "SECRET" in s] == []


def test_local_path_keeps_plain_digests():
    """The local pipelines run no transform, so the sink gets the plain SHA-256 the store verifies against."""
    config = yaml.safe_load(VENDOR.read_text(encoding="utf-8"))
    for name in ("traces/local", "logs/local"):
        assert not [p for p in config["service"]["pipelines"][name]["processors"] if p.startswith("transform")]


@pytest.mark.parametrize("config", [
    {"error_mode": "propagate", "trace_statements": [{"context": "span", "statements": [s]}]}
    for s in (
        'set(attributes["x"], attributes["y"])',
        'keep_keys(attributes, ["x"]) where name == "a"',
        'delete_key(attributes, "x")',
        'delete_matching_keys(attributes, "gen_ai.*")',
        'keep_matching_keys(attributes, "gen_ai.*")',
        'keep_keys(span.attributes, ["x"])',
        'keep_keys(attributes, [])',
        'set(attributes["k"], SHA256(attributes["x"]))',
        'set(attributes["k"], SHA256(Concat(["s", attributes["x"]], ""))) where attributes["y"] != nil and Len("s") >= 1',
        'set(body, "")',
        'keep_keys(attributes, ["x"]); keep_keys(attributes, ["y"])',
    )
] + [
    {"error_mode": "propagate", "trace_statements": [{"context": "log", "statements": ['keep_keys(attributes, ["x"])']}]},
    {"error_mode": "propagate", "log_statements": [{"context": "spanevent", "statements": ['keep_keys(attributes, ["x"])']}]},
    {"error_mode": "propagate", "log_statements": [{"context": "log", "statements": ['set(status.message, "")']}]},
    {"error_mode": "propagate", "trace_statements": [{"context": "span", "conditions": ["true"],
                                                      "statements": ['keep_keys(attributes, ["x"])']}]},
    {"error_mode": "ignore", "trace_statements": [{"context": "span", "statements": ['keep_keys(attributes, ["x"])']}]},
    {"error_mode": "propagate", "metric_statements": []},
])
def test_evaluator_refuses_what_it_does_not_understand(config):
    """The OTTL evaluator raises on any statement, context or key outside its subset instead of ignoring it."""
    with pytest.raises(UnsupportedOTTL):
        apply_transform(config, sample(), ENV)


def test_store_facts_keep_their_state_and_lose_their_digest():
    """A store fact (docs/wire.md) reaches the vendor with its ids, state, reason, revocation time and change
    number, and without the plain SHA-256 of the bytes it names."""
    fact = {n.STORE_ID: "6f1c2d3e4a5b6c7d8e9f0a1b2c3d4e5f", n.ATTEMPT_ID: "att-1", n.RUN_ID: "run-1",
            n.STORE_ITEM_KEY: "att-1-2", n.STORE_ITEM_SHA256: INPUT_SHA, n.STORE_STATE: "evicted",
            n.STORE_REASON: "disk_budget", n.STORE_REVOKED_AT: 1764597792000000000, n.STORE_SEQ: 42}
    record = log(n.STORE_FACT_EVENT, fact)
    record["traceId"] = record["spanId"] = ""  # a fact belongs to no span
    data = {"resourceLogs": [{"resource": {"attributes": attrs(RESOURCE)},
                              "scopeLogs": [{"scope": {"name": "otel_inputs.store"}, "logRecords": [record]}]}]}
    (kept_fact,) = out_logs(apply_transform(transform(), data, ENV))
    got = as_dict(kept_fact["attributes"])
    assert set(got) == set(fact) - {n.STORE_ITEM_SHA256} | {n.EXPORT_REDACTION}
    assert got[n.STORE_STATE] == {"stringValue": "evicted"} and got[n.STORE_SEQ] == {"intValue": "42"}
    assert kept_fact["eventName"] == n.STORE_FACT_EVENT
