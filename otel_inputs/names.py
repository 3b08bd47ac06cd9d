"""The registry of every span attribute, event and link name otel-inputs reads or writes.

This is the Python copy of the wire contract in ``docs/wire.md`` (the authority), which
``docs/registry/otel_inputs.yaml`` repeats in the semantic-conventions format for other languages;
``tests/test_docs.py`` keeps the three equal.  A runtime in any language that emits these names
gets the same exporter and viewer.  Nothing else in the project spells one of these names as a
string literal; import them from here.
"""

from __future__ import annotations

PACKET_VERSION = 1
"""Value of :data:`PACKET_VERSION_ATTR` for what this module describes."""

# --- GenAI semantic-convention names (reused, never redefined) -------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM = "gen_ai.system"  # older spelling of the provider, read from foreign spans only
GEN_AI_PROMPT = "gen_ai.prompt"  # deprecated content attribute, read from foreign spans only

OPERATION_INVOKE_AGENT = "invoke_agent"
SPAN_NAME_PREFIX = "invoke_agent"

# OpenInference (Arize) names, read from foreign spans only.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
# Kinds that send messages or run an agent (a CHAIN span contains a run: OPENINFERENCE_KIND_CHAIN).
OPENINFERENCE_LLM_KINDS = ("LLM", "AGENT")
OPENINFERENCE_INPUT_VALUE = "input.value"
OPENINFERENCE_SESSION_ID = "session.id"
OPENINFERENCE_MODEL_NAME = "llm.model_name"
# Flattened messages: "llm.input_messages.<i>.message.role|content".
OPENINFERENCE_INPUT_MESSAGES = "llm.input_messages"
OPENINFERENCE_MESSAGE_ROLE = "message.role"
OPENINFERENCE_MESSAGE_CONTENT = "message.content"

# Environment switches.
ENV_CAPTURE = "OTEL_INPUTS_CAPTURE"
ENV_GENAI_CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENV_DB = "OTEL_INPUTS_DB"
ENV_STORE = "OTEL_INPUTS_STORE"
ENV_CLICKHOUSE = "OTEL_INPUTS_CLICKHOUSE"  # viewer: a ClickHouse URL to read instead of OTEL_INPUTS_DB
ENV_READ_TOOLS = "OTEL_INPUTS_READ_TOOLS"  # viewer: tool name -> path argument(s), JSON or a JSON file

# --- Span attributes (facts about the attempt as a whole) -------------------------------------
RUN_ID = "otel_inputs.run.id"
ATTEMPT_ID = "otel_inputs.attempt.id"
PHASE = "otel_inputs.phase"
SEND_KIND = "otel_inputs.send_kind"
TURN_INDEX = "otel_inputs.turn_index"
PREVIOUS_TURN_ATTEMPT_ID = "otel_inputs.previous_turn_attempt_id"
RETRY_OF_ATTEMPT_ID = "otel_inputs.retry_of_attempt_id"
TASK_PROMPT = "otel_inputs.task.prompt"
TASK_SOURCE_KIND = "otel_inputs.task.source_kind"
TASK_SOURCE_PATH = "otel_inputs.task.source_path"
TASK_SIZE_BYTES = "otel_inputs.task.size_bytes"
TASK_SHA256 = "otel_inputs.task.sha256"
PACKET_VERSION_ATTR = "otel_inputs.packet.version"
PACKET_COVERAGE = "otel_inputs.packet.coverage"
PACKET_DECLARED_COUNT = "otel_inputs.packet.declared_count"
PACKET_CAPTURED_COUNT = "otel_inputs.packet.captured_count"
PACKET_OMITTED_COUNT = "otel_inputs.packet.omitted_count"
PACKET_ITEM_COUNT = "otel_inputs.packet.item_count"
PACKET_GAP_REASON = "otel_inputs.packet.gap_reason"
CAPTURE_DECISION = "otel_inputs.capture.decision"
CAPTURE_GAP_REASON = "otel_inputs.capture.gap_reason"
STORE_OBJECTS_URL = "otel_inputs.store.objects_url"  # the recording store's bucket location (credential-free)
STORE_ID = "otel_inputs.store.id"  # the recording store's random id (also on each of its store facts)

# --- Links ------------------------------------------------------------------------------------
LINK_KIND = "otel_inputs.link.kind"
LINK_PREVIOUS_TURN = "previous_turn"
LINK_RETRY_OF = "retry_of"

# --- Event: one per input item ----------------------------------------------------------------
INPUT_EVENT = "otel_inputs.input"
INPUT_ID = "otel_inputs.input.id"
INPUT_SEQ = "otel_inputs.input.seq"
INPUT_LABEL = "otel_inputs.input.label"
INPUT_SOURCE_KIND = "otel_inputs.input.source_kind"
INPUT_DELIVERY_MODE = "otel_inputs.input.delivery_mode"
INPUT_SOURCE_PATH = "otel_inputs.input.source_path"
INPUT_SNAPSHOT_REF = "otel_inputs.input.snapshot_ref"
INPUT_MEDIA_TYPE = "otel_inputs.input.media_type"
INPUT_PREVIEW_KIND = "otel_inputs.input.preview_kind"
INPUT_SIZE_BYTES = "otel_inputs.input.size_bytes"
INPUT_SHA256 = "otel_inputs.input.sha256"
INPUT_CAPTURE_STATUS = "otel_inputs.input.capture_status"
INPUT_ARTIFACT_STATUS = "otel_inputs.input.artifact_status"
INPUT_DETAIL = "otel_inputs.input.detail"

INPUT_EVENT_ATTRIBUTES = (
    INPUT_ID,
    INPUT_SEQ,
    INPUT_LABEL,
    INPUT_SOURCE_KIND,
    INPUT_DELIVERY_MODE,
    INPUT_SOURCE_PATH,
    INPUT_SNAPSHOT_REF,
    INPUT_MEDIA_TYPE,
    INPUT_PREVIEW_KIND,
    INPUT_SIZE_BYTES,
    INPUT_SHA256,
    INPUT_CAPTURE_STATUS,
    INPUT_ARTIFACT_STATUS,
    INPUT_DETAIL,
)

# --- Event: the logical request and the observable output (seed 001 §2) ----------------------
EXCHANGE_PART_EVENT = "otel_inputs.exchange_part"
PART_NAME = "otel_inputs.part.name"
PART_CAPTURE = "otel_inputs.part.capture"
PART_REASON = "otel_inputs.part.reason"
PART_DISPATCH = "otel_inputs.part.dispatch"
PART_REF = "otel_inputs.part.ref"
PART_SHA256 = "otel_inputs.part.sha256"
PART_SIZE_BYTES = "otel_inputs.part.size_bytes"

# --- Owner-facing sentences (exact text, WIRE.md) ---------------------------------------------
SENTENCE_LEGACY_TASK = (
    "Task instructions were not captured separately for this attempt. "
    "The exact user message is available below."
)
SENTENCE_NO_PACKET = "Attachment accounting was not recorded for this attempt."
SENTENCE_EMPTY_PACKET = "No explicit files or attachments were supplied on this dispatch."
DELIVERY_LABELS = {
    "path_reference": "Available by path",
    "inline": "Included in message",
    "provider_attachment": "Attached to request",
    "session_history": "Inherited from session",
}

# === Exchange-part persistence, bounds and environment (issue 5, otel_inputs/_parts.py) ======
# Appended block: the two event attributes below extend the `otel_inputs.exchange_part` event of
# WIRE.md; the wire values of capture/dispatch/persistence are the enums in otel_inputs/_parts.py.
PART_PERSISTENCE = "otel_inputs.part.persistence"  # queued | not_queued at submit; the store receipt is the authority later
PART_DETAIL = "otel_inputs.part.detail"  # safe one-line detail, e.g. the tripped bound
PART_REF_PREFIX = "part:"  # PART_REF = "part:<attempt_key>/<part name>"

EXCHANGE_PART_EVENT_ATTRIBUTES = (
    PART_NAME,
    PART_CAPTURE,
    PART_REASON,
    PART_DISPATCH,
    PART_REF,
    PART_SHA256,
    PART_SIZE_BYTES,
    PART_PERSISTENCE,
    PART_DETAIL,
)

# -- store facts (docs/wire.md, "The store fact"): a log record per change of an item's state -----
STORE_FACT_EVENT = "otel_inputs.store.item_state"  # event name; no body, never content
STORE_ITEM_KEY = "otel_inputs.store.item_key"  # input id, "part:<name>", "" (the attempt), or an object's SHA-256
STORE_ITEM_SHA256 = "otel_inputs.store.item_sha256"
STORE_STATE = "otel_inputs.store.state"  # otel_inputs.types.ItemState
STORE_REASON = "otel_inputs.store.reason"  # why not captured / evicted / upload failed (a kind, no message)
STORE_REVOKED_AT = "otel_inputs.store.revoked_at"  # ns since the epoch; only when its source was revoked
STORE_SEQ = "otel_inputs.store.seq"  # the catalog's change number: for one item the highest is its state now

ENV_CAPTURE_MAX_SECONDS = "OTEL_INPUTS_CAPTURE_MAX_SECONDS"  # the wall-time bound of one attempt's capture
ENV_PART_MAX_BYTES = "OTEL_INPUTS_PART_MAX_BYTES"
ENV_RUN_MAX_PARTS = "OTEL_INPUTS_RUN_MAX_PARTS"
ENV_RUN_MAX_BYTES = "OTEL_INPUTS_RUN_MAX_BYTES"
ENV_PART_MAX_PENDING = "OTEL_INPUTS_PART_MAX_PENDING"
ENV_PART_MAX_PENDING_BYTES = "OTEL_INPUTS_PART_MAX_PENDING_BYTES"
ENV_PART_WRITE_TIMEOUT_S = "OTEL_INPUTS_PART_WRITE_TIMEOUT_S"
# === end of exchange-part block ===============================================================

# -- artifact store (environment variables read by otel_inputs.store) ----------------------------
ENV_STORE_BUDGET = "OTEL_INPUTS_STORE_BUDGET"
ENV_STORE_MIN_FREE = "OTEL_INPUTS_STORE_MIN_FREE"
ENV_RUN_BUDGET = "OTEL_INPUTS_RUN_BUDGET"
ENV_ACCESS_POLICY = "OTEL_INPUTS_ACCESS_POLICY"
ENV_REVOCATIONS = "OTEL_INPUTS_REVOCATIONS"
# snapshot bytes on object storage (otel_inputs.store.bucket, docs/objects.md): the bucket URL
# (s3://bucket/prefix, gs://..., file:///dir; fsspec options from its own FSSPEC_<PROTOCOL> variables)
# and the bound of the background upload queue (objects; a commit past it records a queue_full gap)
ENV_OBJECTS_URL = "OTEL_INPUTS_OBJECTS_URL"
ENV_OBJECTS_QUEUE = "OTEL_INPUTS_OBJECTS_QUEUE"
ENV_OBJECTS_TIMEOUT_S = "OTEL_INPUTS_OBJECTS_TIMEOUT_S"  # one bucket call's deadline, seconds
# the fleet viewer's bucket roots (comma-separated URLs, the only places it reads bytes from; docs/fleet.md)
ENV_OBJECTS_ROOTS = "OTEL_INPUTS_OBJECTS_ROOTS"
# === Foreign encodings read by the exporter's projection (docs/encodings.md) ====================
# Read from other instrumentations' spans and log records only; otel-inputs never writes them.
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"  # older spelling (OpenLLMetry)
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"  # older spelling (OpenLLMetry)
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
# GenAI operation names that are a model call (a step of kind model_call), and those that send messages.
OPERATIONS_MODEL_CALL = ("chat", "text_completion", "generate_content", "embeddings")
OPERATIONS_SENDING_MESSAGES = ("chat", "text_completion", "generate_content")
OPERATION_EXECUTE_TOOL = "execute_tool"
# GenAI content events (log records, or span events from older instrumentations).
EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"
EVENT_USER_MESSAGE = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE = "gen_ai.tool.message"
EVENT_CHOICE = "gen_ai.choice"
EVENT_CONTENT_PROMPT = "gen_ai.content.prompt"  # semconv <= 1.27 span event carrying gen_ai.prompt
# The attribute holding a per-message span event's content (Strands: a JSON list of {"text": ...}).
EVENT_CONTENT_KEY = "content"
# OpenLLMetry (Traceloop): indexed "gen_ai.prompt.<i>.role|content", no gen_ai.operation.name.
OPENLLMETRY_REQUEST_TYPE = "llm.request.type"
OPENLLMETRY_PROMPT_PREFIX = "gen_ai.prompt"
OPENLLMETRY_COMPLETION_PREFIX = "gen_ai.completion"
OPENLLMETRY_USAGE_TOTAL = "llm.usage.total_tokens"
# OpenInference: provider and system, tokens, tools, and the kinds that are steps when nested.
OPENINFERENCE_LLM_SYSTEM = "llm.system"
OPENINFERENCE_LLM_PROVIDER = "llm.provider"
OPENINFERENCE_PROMPT_TOKENS = "llm.token_count.prompt"
OPENINFERENCE_COMPLETION_TOKENS = "llm.token_count.completion"
OPENINFERENCE_TOOL_NAME = "tool.name"
OPENINFERENCE_TOOL_PARAMETERS = "tool.parameters"
OPENINFERENCE_STEP_KINDS = ("TOOL", "EMBEDDING", "RETRIEVER", "RERANKER")
# A CHAIN span contains a run (LangGraph's root, its nodes and runnables): the root is the attempt.
OPENINFERENCE_KIND_CHAIN = "CHAIN"
# pydantic-ai: the agent-run span's whole conversation (inputs and outputs), GenAI message JSON.
PYDANTIC_AI_ALL_MESSAGES = "pydantic_ai.all_messages"
# The Vercel AI SDK's own telemetry (experimental_telemetry, ai <= 6): exporter/_encodings/vercel_ai.py.
VERCEL_OPERATION_ID = "ai.operationId"
VERCEL_TOOL_CALL_OPERATION = "ai.toolCall"  # also the span name
VERCEL_PROMPT = "ai.prompt"
VERCEL_PROMPT_MESSAGES = "ai.prompt.messages"
VERCEL_MODEL_ID = "ai.model.id"
VERCEL_MODEL_PROVIDER = "ai.model.provider"
VERCEL_RESPONSE_MODEL = "ai.response.model"
VERCEL_USAGE_INPUT_TOKENS = "ai.usage.inputTokens"
VERCEL_USAGE_OUTPUT_TOKENS = "ai.usage.outputTokens"
VERCEL_USAGE_PROMPT_TOKENS = "ai.usage.promptTokens"  # ai <= 4
VERCEL_USAGE_COMPLETION_TOKENS = "ai.usage.completionTokens"  # ai <= 4
VERCEL_TOOL_CALL_NAME = "ai.toolCall.name"
VERCEL_TOOL_CALL_ID = "ai.toolCall.id"
VERCEL_TOOL_CALL_ARGS = "ai.toolCall.args"
VERCEL_TOOL_CALL_INPUT = "ai.toolCall.input"
VERCEL_FUNCTION_ID = "ai.telemetry.functionId"
VERCEL_METADATA_SESSION_ID = "ai.telemetry.metadata.sessionId"
# === end of foreign-encodings block =============================================================

# === GenAI conventions, log events and backend compatibility (issue 11, agentside) ===========
# Model provider of an INTERNAL attempt span: the GenAI conventions removed gen_ai.provider.name
# from INTERNAL invoke_agent spans ("provider name does not apply to local agents"), so the
# provider the runtime dispatches to is recorded under our prefix there; CLIENT spans keep
# gen_ai.provider.name.
PROVIDER_NAME = "otel_inputs.provider.name"
# The GenAI content log event EVENT_INFERENCE_DETAILS (above) carries the exact messages when the
# capture switch says EVENT_ONLY or SPAN_AND_EVENT, correlated to the attempt span by context.
# Set by collector-config/vendor.yaml on every span and log record it redacted for export.
EXPORT_REDACTION = "otel_inputs.export.redaction"
EXPORT_REDACTION_ALLOWLIST = "allowlist_v1"
# Keyed digests that replace the plain SHA-256 values on the vendor path (vendor.yaml):
# hex SHA-256 of (export key ++ plain lowercase-hex SHA-256); see docs/wire.md.
TASK_KEYED_SHA256 = "otel_inputs.task.keyed_sha256"
INPUT_KEYED_SHA256 = "otel_inputs.input.keyed_sha256"
PART_KEYED_SHA256 = "otel_inputs.part.keyed_sha256"

# Backend compatibility (opt-in, OTEL_INPUTS_BACKEND_COMPAT): names other backends read.
OPENINFERENCE_INPUT_MIME_TYPE = "input.mime_type"
OPENINFERENCE_OUTPUT_VALUE = "output.value"
OPENINFERENCE_OUTPUT_MIME_TYPE = "output.mime_type"
OPENINFERENCE_METADATA = "metadata"
OPENINFERENCE_KIND_AGENT = "AGENT"
LANGFUSE_OBSERVATION_TYPE = "langfuse.observation.type"
LANGFUSE_OBSERVATION_INPUT = "langfuse.observation.input"
LANGFUSE_OBSERVATION_OUTPUT = "langfuse.observation.output"
LANGFUSE_OBSERVATION_METADATA = "langfuse.observation.metadata"  # prefix: ".<key>"
LANGFUSE_TYPE_AGENT = "agent"

ENV_BACKEND_COMPAT = "OTEL_INPUTS_BACKEND_COMPAT"
# === end of GenAI/compat block ================================================================
# === Coding agents: the records otel-inputs hooks send, and the runtimes' own names (issue 21) ==
# Written by otel_inputs/hooks (installed by `otel-inputs setup`): log records sent to
# `otel-inputs collect`, one per turn the hook saw and one per instruction file it listed.
HOOK_TURN_EVENT = "otel_inputs.hook.turn"
INSTRUCTION_FILE_EVENT = "otel_inputs.instruction_file"
HOOK_RUNTIME = "otel_inputs.hook.runtime"  # claude-code | codex | gemini-cli
HOOK_EVENT = "otel_inputs.hook.event"  # the runtime's hook event (UserPromptSubmit, InstructionsLoaded, BeforeAgent)
HOOK_TURN_KEY = "otel_inputs.hook.turn_key"  # the runtime's id of the turn (Claude prompt_id, Codex turn_id)
HOOK_PROCESS_KEY = "otel_inputs.hook.process_key"  # the agent process that ran the hook (pid:start time)
HOOK_CAPTURE_ID = "otel_inputs.hook.capture_id"  # the artifact-store attempt holding the snapshots
HOOK_PROMPT_SHA256 = "otel_inputs.hook.prompt_sha256"
HOOK_PROMPT_LENGTH = "otel_inputs.hook.prompt_length"
HOOK_FILE_COUNT = "otel_inputs.hook.file_count"
HOOK_GAP = "otel_inputs.hook.gap"  # what the hook could not do, one line per gap
INSTRUCTION_DISCOVERY = "otel_inputs.instruction.discovery"  # why the hook listed the file
INSTRUCTION_MEMORY_TYPE = "otel_inputs.instruction.memory_type"  # Claude Code's InstructionsLoaded report
INSTRUCTION_LOAD_REASON = "otel_inputs.instruction.load_reason"  # Claude Code's InstructionsLoaded report
# Claude Code with OTEL_LOG_RAW_API_BODIES=file:DIR: the worker reads each request body of the turn (agent-side)
# into the store at its end (Stop) and says, per instruction file, whether its bytes are in it.
REQUEST_BODY_EVENT = "otel_inputs.request_body"
REQUEST_BODY_REF = "otel_inputs.request_body.ref"  # the body's path exactly as the runtime's body_ref names it
INSTRUCTION_DELIVERED = "otel_inputs.instruction.delivered"  # per file, in a request_body record's order
INSTRUCTION_DELIVERED_DETAIL = "otel_inputs.instruction.delivered_detail"
RUNTIME_CLAUDE_CODE = "claude-code"
RUNTIME_CODEX = "codex"
RUNTIME_GEMINI_CLI = "gemini-cli"
RUNTIMES = (RUNTIME_CLAUDE_CODE, RUNTIME_CODEX, RUNTIME_GEMINI_CLI)
ENV_HOOK_ENDPOINT = "OTEL_INPUTS_HOOK_ENDPOINT"  # OTLP/HTTP base URL the hook worker sends to
# === end of coding-agents block ==================================================================

# === Coding agents' own telemetry, read (never written) by exporter/_encodings (docs/coding-agents.md) =====
# Dotted names are in docs/wire.md ("Names read from coding agents") and the registry; the rest are the
# runtimes' plain attribute and event names, kept here so no module spells them.
EVENT_NAME_ATTR = "event.name"  # a log record's name when its EventName is empty or a source location
EVENT_SEQUENCE_ATTR = "event.sequence"
SOURCE_LOCATION_PREFIX = "event "  # Codex's EventName: "event otel/src/...rs:1234"
# Claude Code (service claude-code)
CLAUDE_SPAN_INTERACTION = "claude_code.interaction"
CLAUDE_SPAN_LLM_REQUEST = "claude_code.llm_request"
CLAUDE_SPAN_TOOL = "claude_code.tool"
CLAUDE_PROMPT_ID = "prompt.id"
CLAUDE_EVENT_USER_PROMPT = "user_prompt"
CLAUDE_EVENT_API_REQUEST_BODY = "api_request_body"
CLAUDE_EVENT_API_REQUEST = "api_request"
CLAUDE_EVENT_TOOL_RESULT = "tool_result"
CLAUDE_USER_PROMPT = "user_prompt"
CLAUDE_PROMPT = "prompt"
CLAUDE_QUERY_SOURCE = "query_source"
CLAUDE_BODY = "body"
CLAUDE_BODY_REF = "body_ref"
CLAUDE_BODY_TRUNCATED = "body_truncated"
CLAUDE_BODY_LENGTH = "body_length"
CLAUDE_MODEL = "model"
CLAUDE_INPUT_TOKENS = "input_tokens"
CLAUDE_OUTPUT_TOKENS = "output_tokens"
CLAUDE_TOOL_NAME = "tool_name"
CLAUDE_TOOL_USE_ID = "tool_use_id"
CLAUDE_TOOL_INPUT = "tool_input"
CLAUDE_FILE_PATH = "file_path"
# Codex CLI (services codex_exec, codex_*)
CODEX_SPAN_TURN = "session_task.turn"
CODEX_SPAN_REQUEST = "try_run_sampling_request"
CODEX_SPAN_RESPONSE_EVENT = "handle_responses"
CODEX_TURN_ID = "turn.id"
CODEX_CONVERSATION_ID = "conversation.id"
CODEX_TOOL_PHASE = "codex.tool.phase"
CODEX_CALL_ID = "call_id"
CODEX_TOOL_NAME = "tool_name"
CODEX_MODEL = "model"
CODEX_ARGUMENTS = "arguments"
CODEX_PROMPT = "prompt"
CODEX_EVENT_USER_PROMPT = "codex.user_prompt"
CODEX_EVENT_TOOL_RESULT = "codex.tool_result"
# Gemini CLI (service gemini-cli)
GEMINI_EVENT_USER_PROMPT = "gemini_cli.user_prompt"
GEMINI_EVENT_API_REQUEST = "gemini_cli.api_request"
GEMINI_EVENT_TOOL_CALL = "gemini_cli.tool_call"
GEMINI_TOOL_CALL_ID = "gen_ai.tool.call_id"  # Gemini's spelling; GenAI's is gen_ai.tool.call.id
GEMINI_OPERATION_LLM_CALL = "llm_call"
GEMINI_OPERATION_TOOL_CALL = "tool_call"
GEMINI_ROLE = "role"
GEMINI_REQUEST_TEXT = "request_text"
GEMINI_FUNCTION_ARGS = "function_args"
GEMINI_PROMPT = "prompt"
# === end of coding agents' names ==================================================================

# Local secret for the keyed digests of collector-config/vendor.yaml (read by the Collector).
ENV_EXPORT_DIGEST_KEY = "OTEL_INPUTS_EXPORT_DIGEST_KEY"

# Viewer login (docs/access.md): the [auth] section `otel-inputs view` writes for st.login (OIDC).
ENV_AUTH_METADATA_URL = "OTEL_INPUTS_AUTH_METADATA_URL"
ENV_AUTH_CLIENT_ID = "OTEL_INPUTS_AUTH_CLIENT_ID"
ENV_AUTH_CLIENT_SECRET = "OTEL_INPUTS_AUTH_CLIENT_SECRET"
ENV_AUTH_COOKIE_SECRET = "OTEL_INPUTS_AUTH_COOKIE_SECRET"
ENV_AUTH_REDIRECT_URI = "OTEL_INPUTS_AUTH_REDIRECT_URI"
