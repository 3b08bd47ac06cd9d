-- The attempt projection as ClickHouse views over the stock exporter's otel_traces / otel_logs, so
-- the Collector's clickhouseexporter is the only writer.  The same rules as the DuckDB path
-- (exporter/_rows.py derive, exporter/_steps.py resolve, DuckDB migration 11's messages view);
-- what the stock tables cannot tell is listed in docs/clickhouse.md and marked in projection_gaps.
-- Apply after otel_tables.sql and projection_functions.sql, in the same database:
--   clickhouse-client --database otel --multiquery < clickhouse/projection.sql

-- One row per span (a retried Collector insert can land a span twice).
CREATE VIEW IF NOT EXISTS otel_inputs_spans AS
SELECT * FROM otel_traces ORDER BY Timestamp LIMIT 1 BY TraceId, SpanId;

-- Every GenAI span with what it is as an attempt or a step (exporter/_rows.py attempt_row),
-- derived once per span as the exporter inserts it (a materialized view: the derivation needs the
-- span alone).  ReplacingMergeTree + FINAL keep one row per span when a span is inserted twice.
CREATE TABLE IF NOT EXISTS otel_inputs_genai_span_rows (
    attempt_id String, trace_id String, span_id String, source_format LowCardinality(String), packet Bool,
    started_at DateTime64(9), ended_at DateTime64(9), parent_span_id Nullable(String), span_name Nullable(String),
    session_id Nullable(String), agent_name Nullable(String), provider_name Nullable(String), request_model Nullable(String),
    operation_name Nullable(String), step_kind LowCardinality(String), response_model Nullable(String),
    input_tokens Nullable(Int64), output_tokens Nullable(Int64), tool_name Nullable(String), tool_call_id Nullable(String),
    tool_arguments Nullable(String), system_prompt Nullable(String), user_prompt Nullable(String),
    input_messages_json Nullable(String), messages_note Nullable(String), status LowCardinality(String),
    status_message Nullable(String), service_name Nullable(String),
    -- The attempt row's own fields, NULL on a span that is not a packet (agent_attempts reads them as they are).
    run_id Nullable(String), phase Nullable(String), task_prompt Nullable(String), task_source_kind Nullable(String),
    task_source_path Nullable(String), task_size_bytes Nullable(Int64), task_sha256 Nullable(String),
    send_kind Nullable(String), turn_index Nullable(Int64), previous_turn_attempt_id Nullable(String),
    retry_of_attempt_id Nullable(String), input_packet_version Nullable(Int64), input_coverage LowCardinality(String),
    coverage_reason Nullable(String), declared_input_count Nullable(Int64), captured_input_count Nullable(Int64),
    omitted_input_count Nullable(Int64), item_count Nullable(Int64), capture_decision Nullable(String),
    capture_gap_reason Nullable(String)
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_genai_span_rows_mv TO otel_inputs_genai_span_rows AS
WITH s AS (
    SELECT *, SpanAttributes AS A, `Events.Name` AS N, `Events.Attributes` AS E,
        otel_inputs_source_format(A, SpanName) AS source_format,
        -- A packet's attributes (an empty map on any other span), read without a per-column if: a
        -- guarded branch would copy the wide map for each column it guards.
        if(source_format = 'otel_inputs', A, map()) AS PA,
        -- What each encoding recorded (projection_functions.sql, one section per encoding), merged
        -- field by field in the registry's order (exporter/_encodings/__init__.py read).
        multiIf(source_format = 'gen_ai', A['gen_ai.operation.name'], source_format = 'openllmetry', otel_inputs_openllmetry_operation(A),
                source_format = 'openinference', otel_inputs_openinference_operation(A),
                source_format = 'vercel_ai', otel_inputs_vercel_ai_operation(A), 'invoke_agent') AS op,
        otel_inputs_genai_messages(A, N, E) AS m_genai,
        otel_inputs_openllmetry_messages(A) AS m_openllmetry,
        otel_inputs_pydantic_ai_messages(A) AS m_pydantic_ai,
        otel_inputs_openinference_messages(A) AS m_openinference,
        otel_inputs_vercel_ai_messages(A) AS m_vercel_ai,
        multiIf(NOT otel_inputs_messages_empty(m_genai), m_genai, NOT otel_inputs_messages_empty(m_openllmetry), m_openllmetry,
                NOT otel_inputs_messages_empty(m_pydantic_ai), m_pydantic_ai,
                NOT otel_inputs_messages_empty(m_openinference), m_openinference, m_vercel_ai) AS msgs,
        -- Coverage settled (exporter/_rows.py finish_coverage) from the span's own input events.
        otel_inputs_input_events(`Events.Name`, `Events.Timestamp`, `Events.Attributes`) AS ins,
        length(ins) AS input_count, arrayCount(x -> x.5 != '', ins) AS malformed,
        otel_inputs_attr(PA, 'otel_inputs.packet.coverage') AS cov_raw,
        otel_inputs_int(PA['otel_inputs.packet.item_count'], 2147483647) AS items,
        if(cov_raw IN ('complete', 'partial', 'not_recorded'), cov_raw, 'partial') AS cov0,
        arrayFilter(x -> x != '', [
            if(cov_raw IN ('complete', 'partial', 'not_recorded'), '', 'packet coverage missing or not a known value'),
            if(items IS NOT NULL AND input_count < items,
               concat('only ', toString(input_count), ' of ', toString(items), ' input events arrived (span event limit or dropped events)'), ''),
            if(malformed > 0, concat(toString(malformed), ' input events were malformed'), '')]) AS reasons0,
        if(length(reasons0) > 0 AND cov0 = 'complete', 'partial', cov0) AS cov,
        if(otel_inputs_attr(A, 'otel_inputs.packet.gap_reason') IS NOT NULL AND cov != 'complete',
           arrayPushFront(reasons0, assumeNotNull(otel_inputs_attr(A, 'otel_inputs.packet.gap_reason'))), reasons0) AS reasons
    FROM otel_traces
    WHERE source_format IS NOT NULL
)
SELECT
    if(source_format = 'otel_inputs', coalesce(nullIf(otel_inputs_attr(A, 'otel_inputs.attempt.id'), ''), SpanId), SpanId) AS attempt_id,
    TraceId AS trace_id, SpanId AS span_id, source_format, source_format = 'otel_inputs' AS packet,
    Timestamp AS started_at, Timestamp + toIntervalNanosecond(Duration) AS ended_at,
    nullIf(ParentSpanId, '') AS parent_span_id, nullIf(SpanName, '') AS span_name,
    coalesce(otel_inputs_str(A, 'gen_ai.conversation.id'), otel_inputs_str(A, 'session.id'),
             otel_inputs_vercel_ai_str(A, 'ai.telemetry.metadata.sessionId')) AS session_id,
    coalesce(otel_inputs_str(A, 'gen_ai.agent.name'), otel_inputs_vercel_ai_str(A, 'ai.telemetry.functionId')) AS agent_name,
    coalesce(otel_inputs_wire_provider(A), otel_inputs_genai_provider(A), otel_inputs_str(A, 'gen_ai.system'),
             otel_inputs_openinference_provider(A), otel_inputs_vercel_ai_str(A, 'ai.model.provider')) AS provider_name,
    coalesce(otel_inputs_str(A, 'gen_ai.request.model'), otel_inputs_str(A, 'llm.model_name'),
             otel_inputs_vercel_ai_str(A, 'ai.model.id')) AS request_model,
    otel_inputs_str(A, 'gen_ai.operation.name') AS operation_name,
    multiIf(source_format = 'otel_inputs', 'agent', op IN ('chat', 'text_completion', 'generate_content', 'embeddings'), 'model_call',
            op = 'execute_tool', 'tool_call', op = 'invoke_agent', 'agent', op = 'container', 'container', 'other') AS step_kind,
    coalesce(otel_inputs_str(A, 'gen_ai.response.model'), otel_inputs_vercel_ai_str(A, 'ai.response.model')) AS response_model,
    coalesce(otel_inputs_count(A, 'gen_ai.usage.input_tokens'), otel_inputs_count(A, 'gen_ai.usage.prompt_tokens'),
             otel_inputs_count(A, 'llm.token_count.prompt'), otel_inputs_vercel_ai_input_tokens(A)) AS input_tokens,
    coalesce(otel_inputs_count(A, 'gen_ai.usage.output_tokens'), otel_inputs_count(A, 'gen_ai.usage.completion_tokens'),
             otel_inputs_count(A, 'llm.token_count.completion'), otel_inputs_vercel_ai_output_tokens(A)) AS output_tokens,
    coalesce(otel_inputs_str(A, 'gen_ai.tool.name'),
             if(otel_inputs_openinference_recognises(A), otel_inputs_str(A, 'tool.name'), NULL),
             otel_inputs_vercel_ai_str(A, 'ai.toolCall.name')) AS tool_name,
    coalesce(otel_inputs_str(A, 'gen_ai.tool.call.id'), otel_inputs_vercel_ai_str(A, 'ai.toolCall.id')) AS tool_call_id,
    coalesce(otel_inputs_genai_tool_arguments(A, N, E), otel_inputs_openinference_tool_arguments(A),
             otel_inputs_vercel_ai_tool_arguments(A)) AS tool_arguments,
    -- The span's own messages: the first encoding that recorded any (exporter/_encodings/__init__.py read).
    tupleElement(msgs, 1) AS system_prompt,
    tupleElement(msgs, 2) AS user_prompt,
    tupleElement(msgs, 3) AS input_messages_json,
    tupleElement(msgs, 4) AS messages_note,
    StatusCode AS status, nullIf(StatusMessage, '') AS status_message, nullIf(ServiceName, '') AS service_name,
    otel_inputs_attr(PA, 'otel_inputs.run.id') AS run_id,
    otel_inputs_attr(PA, 'otel_inputs.phase') AS phase,
    otel_inputs_attr(PA, 'otel_inputs.task.prompt') AS task_prompt,
    otel_inputs_attr(PA, 'otel_inputs.task.source_kind') AS task_source_kind,
    otel_inputs_attr(PA, 'otel_inputs.task.source_path') AS task_source_path,
    otel_inputs_int(PA['otel_inputs.task.size_bytes'], 9223372036854775807) AS task_size_bytes,
    otel_inputs_attr(PA, 'otel_inputs.task.sha256') AS task_sha256,
    otel_inputs_attr(PA, 'otel_inputs.send_kind') AS send_kind,
    otel_inputs_int(PA['otel_inputs.turn_index'], 2147483647) AS turn_index,
    otel_inputs_attr(PA, 'otel_inputs.previous_turn_attempt_id') AS previous_turn_attempt_id,
    otel_inputs_attr(PA, 'otel_inputs.retry_of_attempt_id') AS retry_of_attempt_id,
    otel_inputs_int(PA['otel_inputs.packet.version'], 2147483647) AS input_packet_version,
    otel_inputs_pick(packet, cov, 'not_recorded') AS input_coverage,
    otel_inputs_pick(packet AND length(reasons) > 0, arrayStringConcat(reasons, '; '), NULL) AS coverage_reason,
    otel_inputs_int(PA['otel_inputs.packet.declared_count'], 2147483647) AS declared_input_count,
    otel_inputs_int(PA['otel_inputs.packet.captured_count'], 2147483647) AS captured_input_count,
    otel_inputs_int(PA['otel_inputs.packet.omitted_count'], 2147483647) AS omitted_input_count,
    items AS item_count,
    otel_inputs_attr(PA, 'otel_inputs.capture.decision') AS capture_decision,
    otel_inputs_attr(PA, 'otel_inputs.capture.gap_reason') AS capture_gap_reason
FROM s;

-- Input rows of packet spans (exporter/_rows.py input_rows), derived once per span as it is
-- inserted; malformed events are kept visible.  A span is always its own attempt's packet, so
-- these rows need no ownership.
CREATE TABLE IF NOT EXISTS otel_inputs_input_rows (
    input_id Nullable(String), attempt_id String, seq Int32, label Nullable(String), source_kind Nullable(String),
    delivery_mode Nullable(String), source_path Nullable(String), snapshot_ref Nullable(String),
    media_type Nullable(String), preview_kind Nullable(String), size_bytes Nullable(Int64), sha256 Nullable(String),
    capture_status Nullable(String), artifact_status Nullable(String), detail Nullable(String),
    captured_at DateTime64(9), row_problem Nullable(String), attempt_started_at DateTime64(9),
    trace_id String, span_id String,
    INDEX sha256_idx sha256 TYPE bloom_filter GRANULARITY 4,
    INDEX source_path_idx source_path TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id, seq);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_input_rows_mv TO otel_inputs_input_rows AS
WITH ev AS (
    SELECT TraceId, SpanId, SpanAttributes, Timestamp, e, e.3 AS at
    FROM otel_traces
    ARRAY JOIN otel_inputs_input_events(`Events.Name`, `Events.Timestamp`, `Events.Attributes`) AS e
    WHERE mapContains(SpanAttributes, 'otel_inputs.packet.version')
)
SELECT nullIf(otel_inputs_attr(at, 'otel_inputs.input.id'), '') AS input_id,
       coalesce(nullIf(otel_inputs_attr(SpanAttributes, 'otel_inputs.attempt.id'), ''), SpanId) AS attempt_id,
       e.4 AS seq,
       otel_inputs_attr(at, 'otel_inputs.input.label') AS label,
       otel_inputs_attr(at, 'otel_inputs.input.source_kind') AS source_kind,
       otel_inputs_attr(at, 'otel_inputs.input.delivery_mode') AS delivery_mode,
       otel_inputs_attr(at, 'otel_inputs.input.source_path') AS source_path,
       otel_inputs_attr(at, 'otel_inputs.input.snapshot_ref') AS snapshot_ref,
       otel_inputs_attr(at, 'otel_inputs.input.media_type') AS media_type,
       otel_inputs_attr(at, 'otel_inputs.input.preview_kind') AS preview_kind,
       otel_inputs_int(at['otel_inputs.input.size_bytes'], 9223372036854775807) AS size_bytes,
       otel_inputs_attr(at, 'otel_inputs.input.sha256') AS sha256,
       if(e.5 != '', 'unreadable', otel_inputs_attr(at, 'otel_inputs.input.capture_status')) AS capture_status,
       if(e.5 != '', 'never_captured', otel_inputs_attr(at, 'otel_inputs.input.artifact_status')) AS artifact_status,
       otel_inputs_attr(at, 'otel_inputs.input.detail') AS detail,
       e.2 AS captured_at, if(e.5 != '', concat('malformed input event: ', e.5), NULL) AS row_problem,
       Timestamp AS attempt_started_at, TraceId AS trace_id, SpanId AS span_id
FROM ev;

-- Exchange-part events of every GenAI span (exporter/_rows.py part_rows), derived as it is
-- inserted; agent_exchange_parts keeps those of spans that are attempts.
CREATE TABLE IF NOT EXISTS otel_inputs_part_rows (
    attempt_id String, part_name Nullable(String), capture Nullable(String), reason Nullable(String),
    dispatch Nullable(String), ref Nullable(String), sha256 Nullable(String), size_bytes Nullable(Int64),
    persistence Nullable(String), detail Nullable(String), recorded_at DateTime64(9), attempt_started_at DateTime64(9),
    row_problem Nullable(String), trace_id String, span_id String, pos UInt32
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id, pos);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_part_rows_mv TO otel_inputs_part_rows AS
WITH ev AS (
    SELECT TraceId, SpanId, Timestamp, otel_inputs_source_format(SpanAttributes, SpanName) AS source_format,
           coalesce(nullIf(otel_inputs_attr(SpanAttributes, 'otel_inputs.attempt.id'), ''), SpanId) AS packet_attempt_id,
           ev.1 AS pos, ev.2 AS recorded_at, ev.3 AS at,
           otel_inputs_int(at['otel_inputs.part.size_bytes'], 9223372036854775807) AS size_bytes,
           nullIf(arrayStringConcat(arrayFilter(x -> x != '', [
               if(mapContains(at, 'otel_inputs.part.size_bytes') AND size_bytes IS NULL, 'size_bytes is not a non-negative integer', ''),
               if(mapContains(at, 'otel_inputs.part.name'), '', 'part name missing')]), '; '), '') AS problems
    FROM otel_traces
    ARRAY JOIN arrayFilter(x -> x.4 = 'otel_inputs.exchange_part',
        arrayMap((i, t, a, nm) -> (i, t, a, nm), arrayEnumerate(`Events.Name`), `Events.Timestamp`, `Events.Attributes`, `Events.Name`)) AS ev
    WHERE source_format IS NOT NULL
)
SELECT if(source_format = 'otel_inputs', packet_attempt_id, SpanId) AS attempt_id,
       otel_inputs_attr(at, 'otel_inputs.part.name') AS part_name,
       otel_inputs_attr(at, 'otel_inputs.part.capture') AS capture,
       otel_inputs_attr(at, 'otel_inputs.part.reason') AS reason,
       otel_inputs_attr(at, 'otel_inputs.part.dispatch') AS dispatch,
       otel_inputs_attr(at, 'otel_inputs.part.ref') AS ref,
       otel_inputs_attr(at, 'otel_inputs.part.sha256') AS sha256,
       size_bytes,
       otel_inputs_attr(at, 'otel_inputs.part.persistence') AS persistence,
       otel_inputs_attr(at, 'otel_inputs.part.detail') AS detail,
       recorded_at, Timestamp AS attempt_started_at,
       if(problems IS NOT NULL, concat('malformed exchange part event: ', problems), NULL) AS row_problem,
       TraceId AS trace_id, SpanId AS span_id, pos
FROM ev;

CREATE VIEW IF NOT EXISTS otel_inputs_genai_spans AS
SELECT * FROM otel_inputs_genai_span_rows FINAL;

-- The traces of each attempt id and session id, sorted by the id: the viewer finds an attempt's
-- (or a session's) traces here first, then reads everything else by the trace (the tables' first
-- sort-key column).  Filled from the GenAI span rows as they are derived (a chained view).
CREATE TABLE IF NOT EXISTS otel_inputs_trace_keys (
    kind LowCardinality(String), key String, trace_id String
) ENGINE = ReplacingMergeTree
ORDER BY (kind, key, trace_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_trace_keys_mv TO otel_inputs_trace_keys AS
SELECT k.1 AS kind, k.2 AS key, trace_id
FROM otel_inputs_genai_span_rows
ARRAY JOIN arrayConcat([('attempt', attempt_id)], if(session_id IS NULL, [], [('session', assumeNotNull(session_id))])) AS k;

-- Every span's parent link and kind (0 ordinary, 1 GenAI, 2 packet), narrow, for the ancestry walk
-- below (kept as spans are inserted).
CREATE TABLE IF NOT EXISTS otel_inputs_span_links (
    trace_id String, span_id String, parent_span_id String, kind UInt8
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_span_links_mv TO otel_inputs_span_links AS
SELECT TraceId AS trace_id, SpanId AS span_id, ParentSpanId AS parent_span_id,
       multiIf(otel_inputs_source_format(SpanAttributes, SpanName) IS NULL, 0, otel_inputs_source_format(SpanAttributes, SpanName) = 'otel_inputs', 2, 1) AS kind
FROM otel_traces;

-- Which attempt each GenAI span belongs to (exporter/_steps.py): a packet span is always an attempt;
-- another GenAI span with a GenAI ancestor (ancestry crosses ordinary spans) is a step of its
-- nearest packet ancestor, else of its topmost GenAI ancestor; with none it is an attempt itself.
-- Ownership depends on the whole trace (a later ancestor turns attempts into its steps), so it is
-- settled anew for every trace an insert touches, over all of that trace's landed spans: the
-- links already stored plus the inserted block (whichever of the two materialized views runs
-- first), and the newest settlement of a span wins.  Reading it is then a key lookup, not a walk.
CREATE TABLE IF NOT EXISTS otel_inputs_span_owner_rows (
    trace_id String, span_id String, owner_span_id String, settled_at DateTime64(9)
) ENGINE = ReplacingMergeTree(settled_at)
ORDER BY (trace_id, span_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_span_owner_mv TO otel_inputs_span_owner_rows AS
WITH RECURSIVE t AS (
    SELECT trace_id, span_id, any(parent_span_id) AS parent_span_id, max(kind) AS kind FROM (
        SELECT trace_id, span_id, parent_span_id, kind FROM otel_inputs_span_links
        WHERE trace_id IN (SELECT TraceId FROM otel_traces)
        UNION ALL
        SELECT TraceId, SpanId, ParentSpanId,
               multiIf(otel_inputs_source_format(SpanAttributes, SpanName) IS NULL, 0, otel_inputs_source_format(SpanAttributes, SpanName) = 'otel_inputs', 2, 1)
        FROM otel_traces)
    GROUP BY trace_id, span_id
),
up AS (
    SELECT trace_id, span_id, parent_span_id AS cur, 1 AS depth FROM t WHERE kind = 1 AND parent_span_id != ''
    UNION ALL
    SELECT up.trace_id, up.span_id, p.parent_span_id AS cur, up.depth + 1 AS depth
    -- A plain join (t has one row per span): INNER ANY JOIN uses each right row once, so of two
    -- siblings under one parent only one would climb on.
    FROM up INNER JOIN t p ON p.trace_id = up.trace_id AND p.span_id = up.cur
    WHERE up.depth < 256 AND p.parent_span_id != ''
),
anc AS (
    SELECT up.trace_id AS trace_id, up.span_id AS span_id,
           argMinIf(g.span_id, up.depth, g.kind = 2) AS nearest_packet, countIf(g.kind = 2) AS packets,
           argMaxIf(g.span_id, up.depth, g.kind > 0) AS topmost, countIf(g.kind > 0) AS genai
    FROM up LEFT JOIN t g ON g.trace_id = up.trace_id AND g.span_id = up.cur
    GROUP BY up.trace_id, up.span_id
)
SELECT s.trace_id AS trace_id, s.span_id AS span_id,
       if(s.kind = 2 OR coalesce(a.genai, 0) = 0, s.span_id, if(a.packets > 0, a.nearest_packet, a.topmost)) AS owner_span_id,
       now64(9) AS settled_at
FROM t s
LEFT JOIN anc a ON a.trace_id = s.trace_id AND a.span_id = s.span_id
WHERE s.kind > 0;

CREATE VIEW IF NOT EXISTS otel_inputs_span_owner AS
SELECT trace_id, span_id, owner_span_id FROM otel_inputs_span_owner_rows FINAL;

-- ===== Coding agents: Claude Code, Codex CLI and Gemini CLI turns as attempts ======================
-- exporter/_encodings/{claude_code,codex,gemini_cli}.py and coding_agents.py rule for rule (docs/coding-agents.md):
-- one attempt per user turn, its model and tool steps (auxiliary calls marked), its instruction files with
-- the runtime's report of loading them and their bytes found in the recorded request.  Views over the
-- stock tables, read at query time; their rows join agent_attempts, agent_attempt_steps and
-- agent_attempt_inputs below.

-- The coding agents' log records and the otel-inputs hook records, each once (a retried export inserts one
-- twice), with their own name: EventName, else the event.name attribute when it is empty or a Rust source
-- location ("event otel/src/...", Codex).
CREATE VIEW IF NOT EXISTS otel_inputs_coding_logs AS
SELECT TraceId AS trace_id, SpanId AS span_id, Timestamp AS ts, ServiceName AS service,
       if(EventName = '' OR startsWith(EventName, 'event '), LogAttributes['event.name'], EventName) AS event,
       LogAttributes AS A, toUInt64OrZero(LogAttributes['event.sequence']) AS seq
FROM otel_logs
WHERE ServiceName IN ('claude-code', 'gemini-cli', 'otel-inputs-hook') OR startsWith(ServiceName, 'codex')
ORDER BY ts LIMIT 1 BY TraceId, SpanId, Timestamp, EventName, mapKeys(LogAttributes), mapValues(LogAttributes);

CREATE VIEW IF NOT EXISTS otel_inputs_coding_hooks AS
SELECT ts, event, A, seq, trace_id, span_id, A['otel_inputs.hook.runtime'] AS runtime,
       A['gen_ai.conversation.id'] AS session_id, A['otel_inputs.hook.turn_key'] AS turn_key,
       A['otel_inputs.hook.process_key'] AS process_key, A['otel_inputs.hook.capture_id'] AS capture_id
FROM otel_inputs_coding_logs
WHERE service = 'otel-inputs-hook' AND event IN ('otel_inputs.hook.turn', 'otel_inputs.instruction_file', 'otel_inputs.request_body');

-- Claude Code file: bodies read agent-side (otel_inputs.request_body): per body path, the first record's facts.
CREATE VIEW IF NOT EXISTS otel_inputs_coding_read_bodies AS
SELECT A['otel_inputs.request_body.ref'] AS ref,
       argMin((A['otel_inputs.part.size_bytes'], A['otel_inputs.part.sha256'], A['otel_inputs.part.capture']),
              (ts, event, seq, trace_id, span_id)) AS facts
FROM otel_inputs_coding_hooks
WHERE event = 'otel_inputs.request_body' AND A['otel_inputs.request_body.ref'] != ''
GROUP BY ref;

-- Claude Code: a turn is a claude_code.interaction span; its records are its trace's and the session's
-- records without trace context inside its time (the session-title call's).
CREATE VIEW IF NOT EXISTS otel_inputs_claude_turns AS
SELECT s.SpanId AS attempt_id, s.TraceId AS trace_id, s.SpanId AS span_id, nullIf(s.SpanAttributes['session.id'], '') AS session_id,
       s.Timestamp AS started_at, s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at,
       nullIf(s.ServiceName, '') AS service_name, nullIf(lower(s.StatusCode), '') AS status,
       nullIf(nullIf(s.SpanAttributes['user_prompt'], ''), '<REDACTED>') AS span_prompt
FROM otel_inputs_spans AS s
WHERE s.SpanName = 'claude_code.interaction';

CREATE VIEW IF NOT EXISTS otel_inputs_claude_turn_logs AS
SELECT t.attempt_id AS attempt_id, t.trace_id AS turn_trace, t.span_id AS turn_span, l.ts AS ts, l.event AS event,
       l.A AS A, l.seq AS seq, l.trace_id AS trace_id, l.span_id AS span_id
FROM otel_inputs_claude_turns AS t
JOIN otel_inputs_coding_logs AS l ON l.trace_id = t.trace_id
UNION ALL
SELECT t.attempt_id, t.trace_id, t.span_id, l.ts, l.event, l.A, l.seq, l.trace_id, l.span_id
FROM otel_inputs_claude_turns AS t
JOIN otel_inputs_coding_logs AS l ON l.trace_id = '' AND l.service = 'claude-code' AND l.A['session.id'] = t.session_id
WHERE l.ts >= t.started_at AND l.ts <= t.ended_at + toIntervalNanosecond(5000000);

CREATE VIEW IF NOT EXISTS otel_inputs_claude_turn_facts AS
SELECT attempt_id,
       nullIf(argMinIf(A['prompt.id'], (NOT (span_id = turn_span AND event = 'user_prompt'), ts, event, seq, trace_id, span_id),
                       trace_id = turn_trace AND A['prompt.id'] != ''), '') AS prompt_id,
       nullIf(argMinIf(A['prompt'], (ts, event, seq, trace_id, span_id),
                       event = 'user_prompt' AND span_id = turn_span AND A['prompt'] NOT IN ('', '<REDACTED>')), '') AS log_prompt,
       countIf(event = 'api_request_body') > 0 AS bodies_on
FROM otel_inputs_claude_turn_logs
GROUP BY attempt_id;

-- A model call's request and query_source: its api_request_body / api_request event inside its time,
-- of the turn's own trace first, then nearest its start (claude_code._pair).
CREATE VIEW IF NOT EXISTS otel_inputs_claude_calls AS
WITH c AS (
    SELECT t.attempt_id AS attempt_id, t.trace_id AS turn_trace, s.SpanId AS span_id, s.TraceId AS trace_id,
           nullIf(s.ParentSpanId, '') AS parent_span_id, s.Timestamp AS started_at,
           s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at, s.SpanAttributes AS SA, s.StatusCode AS status_code
    FROM otel_inputs_claude_turns AS t
    JOIN otel_inputs_spans AS s ON s.TraceId = t.trace_id
    WHERE s.SpanName = 'claude_code.llm_request'
),
p AS (
    SELECT c.attempt_id AS attempt_id, c.span_id AS span_id,
           countIf(l.event = 'api_request_body') > 0 AS has_body,
           argMinIf((mapContains(l.A, 'body'), l.A['body'], l.A['body_truncated'], l.A['body_length'], l.A['body_ref'],
                     l.A['query_source']),
                    (l.trace_id != c.turn_trace, abs(toUnixTimestamp64Nano(l.ts) - toUnixTimestamp64Nano(c.started_at)),
                     l.ts, l.event, l.seq, l.trace_id, l.span_id), l.event = 'api_request_body') AS body,
           argMinIf(l.A['query_source'],
                    (l.trace_id != c.turn_trace, abs(toUnixTimestamp64Nano(l.ts) - toUnixTimestamp64Nano(c.started_at)),
                     l.ts, l.event, l.seq, l.trace_id, l.span_id), l.event = 'api_request') AS api_source
    FROM c
    JOIN otel_inputs_claude_turn_logs AS l ON l.attempt_id = c.attempt_id
    WHERE l.event IN ('api_request_body', 'api_request') AND l.ts >= c.started_at
      AND l.ts <= c.ended_at + toIntervalNanosecond(5000000)
    GROUP BY c.attempt_id, c.span_id
)
SELECT c.attempt_id AS attempt_id, c.turn_trace AS turn_trace, c.span_id AS span_id, c.trace_id AS trace_id,
       c.parent_span_id AS parent_span_id, c.started_at AS started_at, c.ended_at AS ended_at, c.SA AS SA,
       c.status_code AS status_code, f.bodies_on AS bodies_on, coalesce(p.has_body, false) AS has_body,
       coalesce(nullIf(p.api_source, ''), nullIf(tupleElement(p.body, 6), '')) AS query_source,
       if(query_source IS NOT NULL AND query_source NOT IN ('sdk', 'repl_main_thread') AND NOT startsWith(query_source, 'agent'),
          query_source, NULL) AS auxiliary,
       if(has_body AND tupleElement(p.body, 1), tupleElement(p.body, 2), NULL) AS req_text,
       has_body AND tupleElement(p.body, 1) AND tupleElement(p.body, 3) != 'true' AS req_whole,
       if(has_body, toUInt64OrNull(tupleElement(p.body, 4)), NULL) AS req_length,
       multiIf(NOT has_body AND f.bodies_on, 'not recorded: no api_request_body event of Claude Code fell inside this call',
               NOT has_body, 'not recorded by Claude Code: set OTEL_LOG_RAW_API_BODIES=1 (or file:DIR)',
               tupleElement(p.body, 1) AND tupleElement(p.body, 3) = 'true',
                   concat('inline in Claude Code''s api_request_body event, cut at ', toString(length(tupleElement(p.body, 2))),
                          ' of ', toString(coalesce(toUInt64OrNull(tupleElement(p.body, 4)), 0)), ' bytes: partial'),
               tupleElement(p.body, 1),
                   concat('inline in Claude Code''s api_request_body event, whole (', toString(length(tupleElement(p.body, 2))),
                          ' bytes)'),
               tupleElement(p.body, 5) != '' AND rb.ref != '',
                   concat('written whole by Claude Code to ', tupleElement(p.body, 5), '; read agent-side into the store by the ',
                          'otel-inputs hook at the turn''s end (', tupleElement(rb.facts, 1), ' bytes, sha256 ',
                          tupleElement(rb.facts, 2), ', ', tupleElement(rb.facts, 3), ')'),
               tupleElement(p.body, 5) != '',
                   concat('written whole by Claude Code to ', tupleElement(p.body, 5), ' on the agent''s machine (',
                          toString(coalesce(toUInt64OrNull(tupleElement(p.body, 4)), 0)), ' bytes); the receiver does not open it'),
               'the api_request_body event of Claude Code held neither body nor body_ref') AS req_note
       , if(has_body AND NOT tupleElement(p.body, 1), nullIf(tupleElement(p.body, 5), ''), NULL) AS req_ref
FROM c
LEFT JOIN p ON p.attempt_id = c.attempt_id AND p.span_id = c.span_id
LEFT JOIN otel_inputs_claude_turn_facts AS f ON f.attempt_id = c.attempt_id
LEFT JOIN otel_inputs_coding_read_bodies AS rb ON rb.ref = tupleElement(p.body, 5);

CREATE VIEW IF NOT EXISTS otel_inputs_claude_steps AS
SELECT attempt_id, span_id, trace_id, parent_span_id, 'model_call' AS step_kind, CAST(NULL, 'Nullable(String)') AS operation_name,
       'claude_code.llm_request' AS span_name, nullIf(SA['gen_ai.system'], '') AS provider_name,
       coalesce(nullIf(SA['gen_ai.request.model'], ''), nullIf(SA['model'], '')) AS request_model,
       CAST(NULL, 'Nullable(String)') AS response_model, started_at, ended_at,
       toInt64OrNull(SA['input_tokens']) AS input_tokens, toInt64OrNull(SA['output_tokens']) AS output_tokens,
       CAST(NULL, 'Nullable(String)') AS tool_name, CAST(NULL, 'Nullable(String)') AS tool_call_id,
       CAST(NULL, 'Nullable(String)') AS tool_arguments, nullIf(lower(status_code), '') AS status, auxiliary, req_note AS request_record
FROM otel_inputs_claude_calls
UNION ALL
SELECT x.attempt_id, x.span_id, x.trace_id, x.parent_span_id, 'tool_call', NULL, 'claude_code.tool', NULL, NULL, NULL,
       x.started_at, x.ended_at, NULL, NULL, x.tool_name, x.call_id,
       coalesce(nullIf(r.tool_input, ''),
                if(x.file_path != '',
                   concat('{"file_path": "', replaceAll(replaceAll(x.file_path, '\\', '\\\\'), '"', '\\"'), '"}'), NULL)),
       x.status, NULL, NULL
FROM (
    SELECT t.attempt_id AS attempt_id, s.SpanId AS span_id, s.TraceId AS trace_id, nullIf(s.ParentSpanId, '') AS parent_span_id,
           s.Timestamp AS started_at, s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at,
           nullIf(s.SpanAttributes['tool_name'], '') AS tool_name, s.SpanAttributes['file_path'] AS file_path,
           coalesce(nullIf(s.SpanAttributes['gen_ai.tool.call.id'], ''), nullIf(s.SpanAttributes['tool_use_id'], '')) AS call_id,
           nullIf(lower(s.StatusCode), '') AS status
    FROM otel_inputs_claude_turns AS t
    JOIN otel_inputs_spans AS s ON s.TraceId = t.trace_id
    WHERE s.SpanName = 'claude_code.tool'
) AS x
LEFT JOIN (
    SELECT attempt_id, A['tool_use_id'] AS call_id, argMin(A['tool_input'], (ts, event, seq, trace_id, span_id)) AS tool_input
    FROM otel_inputs_claude_turn_logs
    WHERE event = 'tool_result' AND A['tool_input'] != '' AND A['tool_use_id'] != ''
    GROUP BY attempt_id, call_id
) AS r ON r.attempt_id = x.attempt_id AND r.call_id = x.call_id;

-- A Claude Code turn: prompt, and the request of its first model call that is not auxiliary.
CREATE VIEW IF NOT EXISTS otel_inputs_claude_turn_rows AS
SELECT t.attempt_id AS attempt_id, 'claude-code' AS runtime, 'claude_code' AS source_format, 'Claude Code' AS label,
       t.trace_id AS trace_id, t.span_id AS span_id, t.session_id AS session_id, f.prompt_id AS turn_key,
       t.started_at AS started_at, t.ended_at AS ended_at, t.service_name AS service_name, t.status AS status,
       coalesce(t.span_prompt, f.log_prompt) AS prompt, 'claude-code' AS agent_name,
       m.n > 0 AS has_main, tupleElement(m.main, 1) AS provider_name, tupleElement(m.main, 2) AS request_model,
       if(has_main, tupleElement(m.main, 3), NULL) AS req_text, has_main AND tupleElement(m.main, 4) AS req_whole,
       if(has_main, tupleElement(m.main, 5), NULL) AS req_length,
       if(has_main, tupleElement(m.main, 6), 'no model call of the turn was recorded') AS req_note,
       multiIf(NOT req_whole OR NOT isValidJSON(assumeNotNull(req_text)), NULL,
               JSONType(assumeNotNull(req_text), 'system') = 'String', JSONExtractString(assumeNotNull(req_text), 'system'),
               JSONType(assumeNotNull(req_text), 'system') = 'Array',
                   arrayStringConcat(arrayMap(b -> JSONExtractString(b, 'text'),
                       arrayFilter(b -> JSONExtractString(b, 'type') = 'text', JSONExtractArrayRaw(assumeNotNull(req_text), 'system'))),
                       '\n\n'), NULL) AS req_system,
       if(req_whole, req_text, NULL) AS req_messages,
       'OTEL_LOG_USER_PROMPTS=1' AS prompt_switch, if(has_main, tupleElement(m.main, 7), NULL) AS req_ref
FROM otel_inputs_claude_turns AS t
LEFT JOIN otel_inputs_claude_turn_facts AS f ON f.attempt_id = t.attempt_id
LEFT JOIN (
    SELECT attempt_id, countIf(auxiliary IS NULL) AS n,
           argMinIf((provider_name, request_model, req_text, req_whole, req_length, req_note, req_ref), (started_at, span_id),
                    auxiliary IS NULL) AS main
    FROM (SELECT attempt_id, span_id, started_at, auxiliary, nullIf(SA['gen_ai.system'], '') AS provider_name,
                 coalesce(nullIf(SA['gen_ai.request.model'], ''), nullIf(SA['model'], '')) AS request_model,
                 req_text, req_whole, req_length, req_note, req_ref
          FROM otel_inputs_claude_calls)
    GROUP BY attempt_id
) AS m ON m.attempt_id = t.attempt_id;

-- Codex CLI: a turn is a session_task.turn span; its trace is its own, and its steps are the trace's spans
-- inside its time: each try_run_sampling_request (tokens from the handle_responses below it that carries
-- gen_ai.usage.*) and each tool span (tool_name, call_id, codex.tool.phase).
CREATE VIEW IF NOT EXISTS otel_inputs_codex_turns AS
SELECT s.SpanId AS attempt_id, s.TraceId AS trace_id, s.SpanId AS span_id, nullIf(s.SpanAttributes['turn.id'], '') AS turn_key,
       s.Timestamp AS started_at, s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at,
       nullIf(s.ServiceName, '') AS service_name, nullIf(lower(s.StatusCode), '') AS status,
       nullIf(s.SpanAttributes['model'], '') AS request_model
FROM otel_inputs_spans AS s
WHERE s.SpanName = 'session_task.turn' AND startsWith(s.ServiceName, 'codex');

CREATE VIEW IF NOT EXISTS otel_inputs_codex_turn_rows AS
SELECT t.attempt_id AS attempt_id, 'codex' AS runtime, 'codex' AS source_format, 'Codex' AS label, t.trace_id AS trace_id,
       t.span_id AS span_id,
       multiIf(sess.v != '' AND lsess.v != '', least(sess.v, lsess.v), sess.v != '', sess.v, lsess.v != '', lsess.v, NULL) AS session_id,
       t.turn_key AS turn_key, t.started_at AS started_at, t.ended_at AS ended_at, t.service_name AS service_name,
       t.status AS status, nullIf(pr.prompt, '') AS prompt, 'codex' AS agent_name, true AS has_main,
       CAST(NULL, 'Nullable(String)') AS provider_name, t.request_model AS request_model,
       CAST(NULL, 'Nullable(String)') AS req_text, false AS req_whole, CAST(NULL, 'Nullable(UInt64)') AS req_length,
       'not recorded by Codex: no Codex setting sends the request messages' AS req_note,
       CAST(NULL, 'Nullable(String)') AS req_system, CAST(NULL, 'Nullable(String)') AS req_messages,
       'set log_user_prompt = true under [otel] for Codex' AS prompt_switch, CAST(NULL, 'Nullable(String)') AS req_ref
FROM otel_inputs_codex_turns AS t
LEFT JOIN (SELECT TraceId, minIf(SpanAttributes['conversation.id'], SpanAttributes['conversation.id'] != '') AS v
           FROM otel_inputs_spans GROUP BY TraceId) AS sess ON sess.TraceId = t.trace_id
LEFT JOIN (SELECT trace_id, minIf(A['conversation.id'], A['conversation.id'] != '') AS v
           FROM otel_inputs_coding_logs WHERE trace_id != '' GROUP BY trace_id) AS lsess ON lsess.trace_id = t.trace_id
LEFT JOIN (SELECT t2.attempt_id AS attempt_id,
                  argMinIf(l.A['prompt'], (l.ts, l.event, l.seq, l.trace_id, l.span_id),
                           l.event = 'codex.user_prompt' AND l.A['prompt'] NOT IN ('', '[REDACTED]')) AS prompt
           FROM otel_inputs_codex_turns AS t2 JOIN otel_inputs_coding_logs AS l ON l.trace_id = t2.trace_id
           WHERE l.ts >= t2.started_at AND l.ts <= t2.ended_at GROUP BY t2.attempt_id) AS pr ON pr.attempt_id = t.attempt_id;

CREATE VIEW IF NOT EXISTS otel_inputs_codex_steps AS
WITH inside AS (
    SELECT t.attempt_id AS attempt_id, t.started_at AS turn_start, t.ended_at AS turn_end, s.SpanId AS span_id,
           s.TraceId AS trace_id, nullIf(s.ParentSpanId, '') AS parent_span_id, s.SpanName AS span_name,
           s.Timestamp AS started_at, s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at,
           s.SpanAttributes AS SA, nullIf(lower(s.StatusCode), '') AS status
    FROM otel_inputs_codex_turns AS t
    JOIN otel_inputs_spans AS s ON s.TraceId = t.trace_id
    WHERE s.Timestamp >= t.started_at AND s.Timestamp <= t.ended_at AND s.SpanId != t.span_id
),
usage AS (  -- try_run_sampling_request -> the usage of the response it received
    SELECT r.ParentSpanId AS request_span, r.TraceId AS trace_id,
           any(h.SpanAttributes['gen_ai.usage.input_tokens']) AS input_tokens, any(h.SpanAttributes['gen_ai.usage.output_tokens']) AS output_tokens
    FROM otel_inputs_spans AS h
    JOIN otel_inputs_spans AS r ON r.TraceId = h.TraceId AND r.SpanId = h.ParentSpanId
    WHERE h.SpanName = 'handle_responses' AND mapContains(h.SpanAttributes, 'gen_ai.usage.input_tokens')
      AND startsWith(h.ServiceName, 'codex')
    GROUP BY request_span, trace_id
),
results AS (
    SELECT t.attempt_id AS attempt_id, l.A['call_id'] AS call_id, argMin(l.A['arguments'], (l.ts, l.event, l.seq, l.trace_id, l.span_id)) AS arguments
    FROM otel_inputs_codex_turns AS t JOIN otel_inputs_coding_logs AS l ON l.trace_id = t.trace_id
    WHERE l.event = 'codex.tool_result' AND l.A['call_id'] != '' AND l.ts >= t.started_at AND l.ts <= t.ended_at
    GROUP BY attempt_id, call_id
)
SELECT i.attempt_id AS attempt_id, i.span_id AS span_id, i.trace_id AS trace_id, i.parent_span_id AS parent_span_id,
       'model_call' AS step_kind, CAST(NULL, 'Nullable(String)') AS operation_name, i.span_name AS span_name,
       CAST(NULL, 'Nullable(String)') AS provider_name, nullIf(i.SA['model'], '') AS request_model,
       CAST(NULL, 'Nullable(String)') AS response_model, i.started_at AS started_at, i.ended_at AS ended_at,
       toInt64OrNull(u.input_tokens) AS input_tokens, toInt64OrNull(u.output_tokens) AS output_tokens,
       CAST(NULL, 'Nullable(String)') AS tool_name, CAST(NULL, 'Nullable(String)') AS tool_call_id,
       CAST(NULL, 'Nullable(String)') AS tool_arguments, i.status AS status, CAST(NULL, 'Nullable(String)') AS auxiliary,
       'not recorded by Codex: no Codex setting sends the request messages' AS request_record
FROM inside AS i
LEFT JOIN usage AS u ON u.trace_id = i.trace_id AND u.request_span = i.span_id
WHERE i.span_name = 'try_run_sampling_request'
UNION ALL
SELECT i.attempt_id, i.span_id, i.trace_id, i.parent_span_id, 'tool_call', NULL, i.span_name, NULL, NULL, NULL,
       i.started_at, i.ended_at, NULL, NULL, i.SA['tool_name'], i.SA['call_id'], nullIf(r.arguments, ''), i.status, NULL, NULL
FROM inside AS i
LEFT JOIN results AS r ON r.attempt_id = i.attempt_id AND r.call_id = i.SA['call_id']
WHERE i.span_name != 'try_run_sampling_request' AND i.SA['call_id'] != '' AND i.SA['tool_name'] != ''
  AND i.SA['codex.tool.phase'] != '';

-- Gemini CLI: every llm_call is a root span of its own trace, so a turn is a gemini_cli.user_prompt event,
-- and its steps are the session's spans (gen_ai.conversation.id) from it to the session's next prompt.
CREATE VIEW IF NOT EXISTS otel_inputs_gemini_turns AS
SELECT concat('gemini-cli:', coalesce(session_id, 'no-session'), ':', toString(toUnixTimestamp64Nano(ts))) AS attempt_id,
       session_id, ts AS started_at, toString(toUnixTimestamp64Nano(ts)) AS turn_key, prompt, service_name,
       leadInFrame(toNullable(ts)) OVER (PARTITION BY session_id ORDER BY ts, event, seq, trace_id, span_id
                                         ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS until
FROM (SELECT ts, event, seq, trace_id, span_id, nullIf(A['session.id'], '') AS session_id, nullIf(A['prompt'], '') AS prompt,
             nullIf(service, '') AS service_name
      FROM otel_inputs_coding_logs WHERE service = 'gemini-cli' AND event = 'gemini_cli.user_prompt');

CREATE VIEW IF NOT EXISTS otel_inputs_gemini_spans AS
WITH same AS (  -- the first of each kind of event on a span, in time order
    SELECT trace_id, span_id,
           argMinIf(A['role'], (ts, event, seq), event = 'gemini_cli.api_request') AS role,
           countIf(event = 'gemini_cli.api_request') > 0 AS has_request_event,
           argMinIf(A['request_text'], (ts, event, seq), event = 'gemini_cli.api_request' AND A['request_text'] != '') AS request_text,
           argMinIf(A['gen_ai.provider.name'], (ts, event, seq),
                    event = 'gen_ai.client.inference.operation.details' AND A['gen_ai.provider.name'] != '') AS provider,
           argMinIf(A['gen_ai.system_instructions'], (ts, event, seq),
                    event = 'gen_ai.client.inference.operation.details' AND A['gen_ai.system_instructions'] != '') AS log_system
    FROM otel_inputs_coding_logs WHERE service = 'gemini-cli' AND trace_id != ''
    GROUP BY trace_id, span_id
),
args AS (
    SELECT trace_id, argMin(A['function_args'], (ts, event, seq, trace_id, span_id)) AS function_args
    FROM otel_inputs_coding_logs WHERE service = 'gemini-cli' AND event = 'gemini_cli.tool_call' AND A['function_args'] != ''
    GROUP BY trace_id
)
SELECT s.TraceId AS trace_id, s.SpanId AS span_id, nullIf(s.ParentSpanId, '') AS parent_span_id, s.SpanName AS span_name,
       s.Timestamp AS started_at, s.Timestamp + toIntervalNanosecond(s.Duration) AS ended_at, s.SpanAttributes AS SA,
       s.SpanAttributes['gen_ai.conversation.id'] AS session_id, s.SpanAttributes['gen_ai.operation.name'] AS operation_name,
       multiIf(operation_name = 'llm_call', 'model_call', operation_name = 'tool_call', 'tool_call', 'other') AS step_kind,
       nullIf(lower(s.StatusCode), '') AS status, nullIf(x.provider, '') AS provider_name,
       if(step_kind = 'model_call' AND x.role != '' AND x.role != 'main', x.role, NULL) AS auxiliary,
       if(mapContains(s.SpanAttributes, 'gen_ai.input.messages'), s.SpanAttributes['gen_ai.input.messages'],
          nullIf(x.request_text, '')) AS raw,
       if(mapContains(s.SpanAttributes, 'gen_ai.input.messages'), 'the llm_call span''s gen_ai.input.messages',
          'the api_request event''s request_text') AS raw_where,
       coalesce(nullIf(s.SpanAttributes['gen_ai.system_instructions'], ''), nullIf(x.log_system, '')) AS system_raw,
       raw IS NOT NULL AND isValidJSON(assumeNotNull(raw)) AND JSONType(assumeNotNull(raw)) = 'Array' AS whole,
       multiIf(raw IS NULL AND system_raw IS NULL, NULL, raw IS NULL, system_raw,
               system_raw IS NULL, raw, concat(assumeNotNull(raw), '\n', assumeNotNull(system_raw))) AS req_text,
       multiIf(raw IS NULL AND system_raw IS NULL,
                   'not recorded by Gemini CLI: turn on telemetry.logPrompts and telemetry.traces',
               whole, concat('from ', raw_where, ', Gemini''s own message shape, whole'),
               raw IS NOT NULL, concat('from ', raw_where, ', not parseable as a whole message list: partial'),
               'only the system instructions were recorded by Gemini CLI (turn on telemetry.logPrompts and telemetry.traces for the messages)')
           AS req_note,
       multiIf(system_raw IS NULL, NULL, NOT isValidJSON(assumeNotNull(system_raw)), system_raw,
               JSONType(assumeNotNull(system_raw)) = 'String', JSONExtractString(assumeNotNull(system_raw)),
               JSONType(assumeNotNull(system_raw)) = 'Array',
                   arrayStringConcat(arrayMap(p -> if(JSONHas(p, 'content'), JSONExtractString(p, 'content'), JSONExtractString(p, 'text')),
                                              JSONExtractArrayRaw(assumeNotNull(system_raw))), '\n\n'),
               system_raw) AS req_system,
       if(step_kind = 'tool_call', nullIf(s.SpanAttributes['gen_ai.tool.name'], ''), NULL) AS tool_name,
       if(step_kind = 'tool_call', coalesce(nullIf(s.SpanAttributes['gen_ai.tool.call_id'], ''),
                                            nullIf(s.SpanAttributes['gen_ai.tool.call.id'], '')), NULL) AS tool_call_id,
       if(step_kind = 'tool_call',
          coalesce(if(isValidJSON(s.SpanAttributes['gen_ai.input.messages'])
                      AND JSONType(s.SpanAttributes['gen_ai.input.messages']) = 'Object'
                      AND JSONHas(s.SpanAttributes['gen_ai.input.messages'], 'args'),
                      JSONExtractRaw(s.SpanAttributes['gen_ai.input.messages'], 'args'), NULL),
                   nullIf(a.function_args, '')), NULL) AS tool_arguments
FROM otel_inputs_spans AS s
LEFT JOIN same AS x ON x.trace_id = s.TraceId AND x.span_id = s.SpanId
LEFT JOIN args AS a ON a.trace_id = s.TraceId
WHERE s.ServiceName = 'gemini-cli' AND s.SpanAttributes['gen_ai.operation.name'] != '';

CREATE VIEW IF NOT EXISTS otel_inputs_gemini_steps AS
SELECT t.attempt_id AS attempt_id, g.span_id AS span_id, g.trace_id AS trace_id, g.parent_span_id AS parent_span_id,
       g.step_kind AS step_kind, g.operation_name AS operation_name, g.span_name AS span_name, g.provider_name AS provider_name,
       nullIf(g.SA['gen_ai.request.model'], '') AS request_model, nullIf(g.SA['gen_ai.response.model'], '') AS response_model,
       g.started_at AS started_at, g.ended_at AS ended_at, toInt64OrNull(g.SA['gen_ai.usage.input_tokens']) AS input_tokens,
       toInt64OrNull(g.SA['gen_ai.usage.output_tokens']) AS output_tokens, g.tool_name AS tool_name,
       g.tool_call_id AS tool_call_id, g.tool_arguments AS tool_arguments, g.status AS status, g.auxiliary AS auxiliary,
       if(g.step_kind = 'model_call', g.req_note, NULL) AS request_record,
       g.req_text AS req_text, g.whole AS req_whole, g.req_note AS req_note, g.req_system AS req_system,
       if(g.whole, g.raw, NULL) AS req_messages
FROM otel_inputs_gemini_turns AS t
JOIN otel_inputs_gemini_spans AS g ON g.session_id = t.session_id
WHERE g.started_at >= t.started_at AND (t.until IS NULL OR g.started_at < t.until);

CREATE VIEW IF NOT EXISTS otel_inputs_gemini_turn_rows AS
SELECT t.attempt_id AS attempt_id, 'gemini-cli' AS runtime, 'gemini_cli' AS source_format, 'Gemini CLI' AS label,
       if(m.n > 0, tupleElement(m.main, 7), NULL) AS trace_id, CAST(NULL, 'Nullable(String)') AS span_id,
       t.session_id AS session_id, t.turn_key AS turn_key, t.started_at AS started_at,
       greatest(t.started_at, coalesce(m.last_end, t.started_at)) AS ended_at, t.service_name AS service_name,
       multiIf(m.errors > 0, 'error', m.oks > 0, 'ok', 'unset') AS status, t.prompt AS prompt, 'gemini-cli' AS agent_name,
       m.n > 0 AS has_main, tupleElement(m.main, 1) AS provider_name, tupleElement(m.main, 2) AS request_model,
       if(has_main, tupleElement(m.main, 3), NULL) AS req_text, has_main AND tupleElement(m.main, 4) AS req_whole,
       if(has_main AND tupleElement(m.main, 3) IS NOT NULL, toUInt64(length(assumeNotNull(tupleElement(m.main, 3)))), NULL) AS req_length,
       if(has_main, tupleElement(m.main, 5), 'no model call of the turn was recorded') AS req_note,
       if(has_main, tupleElement(m.main, 6), NULL) AS req_system, if(has_main, tupleElement(m.main, 8), NULL) AS req_messages,
       'turn on telemetry.logPrompts for Gemini CLI' AS prompt_switch, CAST(NULL, 'Nullable(String)') AS req_ref
FROM otel_inputs_gemini_turns AS t
LEFT JOIN (
    SELECT attempt_id, countIf(step_kind = 'model_call' AND auxiliary IS NULL) AS n, max(ended_at) AS last_end,
           countIf(auxiliary IS NULL AND status = 'error') AS errors, countIf(auxiliary IS NULL AND status = 'ok') AS oks,
           argMinIf((provider_name, request_model, req_text, req_whole, req_note, req_system, trace_id, req_messages),
                    (started_at, span_id), step_kind = 'model_call' AND auxiliary IS NULL) AS main
    FROM otel_inputs_gemini_steps GROUP BY attempt_id
) AS m ON m.attempt_id = t.attempt_id;

CREATE VIEW IF NOT EXISTS otel_inputs_coding_turn_rows AS
SELECT attempt_id, runtime, source_format, label, trace_id, span_id, session_id, turn_key, started_at, ended_at, service_name,
       status, prompt, agent_name, provider_name, request_model, req_text, req_whole, req_length, req_note, req_system,
       req_messages, prompt_switch, req_ref
FROM otel_inputs_claude_turn_rows
UNION ALL
SELECT attempt_id, runtime, source_format, label, trace_id, span_id, session_id, turn_key, started_at, ended_at, service_name,
       status, prompt, agent_name, provider_name, request_model, req_text, req_whole, req_length, req_note, req_system,
       req_messages, prompt_switch, req_ref
FROM otel_inputs_codex_turn_rows
UNION ALL
SELECT attempt_id, runtime, source_format, label, trace_id, span_id, session_id, turn_key, started_at, ended_at, service_name,
       status, prompt, agent_name, provider_name, request_model, req_text, req_whole, req_length, req_note, req_system,
       req_messages, prompt_switch, req_ref
FROM otel_inputs_gemini_turn_rows;

-- The coding-agent rows are settled by refreshable materialized views (every 10 s, each stage after the one it
-- reads): a turn needs records of several spans, log records and hook records that arrive apart, and read
-- at query time the rules cost seconds per query.  A turn shows up within one refresh; `SYSTEM REFRESH VIEW`
-- settles at once (docs/clickhouse.md).
CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_coding_turn_table
REFRESH EVERY 10 SECOND ENGINE = MergeTree ORDER BY attempt_id
AS SELECT * FROM otel_inputs_coding_turn_rows;

-- The otel-inputs hook's record of each turn: Claude Code and Codex by the runtime's turn key (the latest
-- record); Gemini CLI by session, prompt digest and time (the nearest within a minute).
CREATE VIEW IF NOT EXISTS otel_inputs_coding_turn_hooks AS
SELECT t.attempt_id AS attempt_id,
       argMax((h.process_key, h.capture_id, h.A['otel_inputs.hook.gap']), (h.ts, h.event, h.seq, h.trace_id, h.span_id)) AS anchor
FROM otel_inputs_coding_turn_table AS t
JOIN otel_inputs_coding_hooks AS h ON h.turn_key = t.turn_key
WHERE t.runtime IN ('claude-code', 'codex') AND t.turn_key IS NOT NULL AND h.event = 'otel_inputs.hook.turn'
GROUP BY t.attempt_id
UNION ALL
SELECT t.attempt_id,
       argMin((h.process_key, h.capture_id, h.A['otel_inputs.hook.gap']),
              (abs(toUnixTimestamp64Nano(h.ts) - toUnixTimestamp64Nano(t.started_at)), h.ts, h.event, h.seq, h.trace_id, h.span_id))
FROM otel_inputs_coding_turn_table AS t
JOIN otel_inputs_coding_hooks AS h ON h.session_id = t.session_id
WHERE t.runtime = 'gemini-cli' AND h.event = 'otel_inputs.hook.turn' AND h.runtime = 'gemini-cli'
  AND abs(toUnixTimestamp64Nano(h.ts) - toUnixTimestamp64Nano(t.started_at)) <= 60000000000
  AND (t.prompt IS NULL OR NOT mapContains(h.A, 'otel_inputs.hook.prompt_sha256')
       OR h.A['otel_inputs.hook.prompt_sha256'] = lower(hex(SHA256(assumeNotNull(t.prompt)))))
GROUP BY t.attempt_id;

-- Instruction files per turn, each with its place (exporter/_encodings/_instructions.py from_hook_records,
-- from_request): the hook's list at the prompt, then (Claude Code) files its InstructionsLoaded reported
-- for the same agent process and not listed, then files the runtime's markers name in its request.
CREATE VIEW IF NOT EXISTS otel_inputs_coding_files AS
WITH listed AS (
    SELECT t.attempt_id AS attempt_id, 0 AS part, h.A['otel_inputs.input.source_path'] AS path,
           argMax(h.A, (h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']), h.A['otel_inputs.input.id'])) AS F,
           argMax(h.ts, (h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']), h.A['otel_inputs.input.id'])) AS captured_at,
           min((h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']))) AS first_seen
    FROM otel_inputs_coding_turn_table AS t
    JOIN otel_inputs_coding_turn_hooks AS k ON k.attempt_id = t.attempt_id
    JOIN otel_inputs_coding_hooks AS h ON h.capture_id = tupleElement(k.anchor, 2)
    WHERE h.event = 'otel_inputs.instruction_file' AND h.A['otel_inputs.input.source_path'] != ''
    GROUP BY attempt_id, path
),
loads AS (
    SELECT t.attempt_id AS attempt_id, 1 AS part, h.A['otel_inputs.input.source_path'] AS path,
           argMax(h.A, (h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']), h.A['otel_inputs.input.id'])) AS F,
           argMax(h.ts, (h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']), h.A['otel_inputs.input.id'])) AS captured_at,
           min((h.ts, toUInt64OrZero(h.A['otel_inputs.input.seq']))) AS first_seen,
           argMin(concat('Claude Code reported it loaded (InstructionsLoaded: memory_type ',
                         h.A['otel_inputs.instruction.memory_type'], ', load_reason ', h.A['otel_inputs.instruction.load_reason'], ')'),
                  (h.ts, h.event, h.seq, h.trace_id, h.span_id)) AS report
    FROM otel_inputs_coding_turn_table AS t
    JOIN otel_inputs_coding_turn_hooks AS k ON k.attempt_id = t.attempt_id
    JOIN otel_inputs_coding_hooks AS h ON h.process_key = tupleElement(k.anchor, 1)
    WHERE t.runtime = 'claude-code' AND tupleElement(k.anchor, 1) != '' AND h.event = 'otel_inputs.instruction_file'
      AND h.A['otel_inputs.instruction.discovery'] = 'reported_loaded' AND h.ts <= t.ended_at
      AND h.A['otel_inputs.input.source_path'] != ''
    GROUP BY attempt_id, path
),
named AS (  -- the runtime's markers in its recorded request, first appearance first
    SELECT attempt_id, 2 AS part, path, idx
    FROM (SELECT t.attempt_id AS attempt_id,
                 if(t.runtime = 'claude-code',
                    arrayMap(g -> g[1], extractAllGroupsVertical(otel_inputs_coding_unescape(assumeNotNull(t.req_text)),
                                                                 'Contents of (/[^\n]*?) \\([^\n]*?\\):\n\n')),
                    arrayMap(g -> g[1], extractAllGroupsVertical(otel_inputs_coding_unescape(assumeNotNull(t.req_text)),
                                                                 '--- Context from: ([^\n]+?) ---\n'))) AS found
          FROM otel_inputs_coding_turn_table AS t
          WHERE t.runtime IN ('claude-code', 'gemini-cli') AND t.req_text IS NOT NULL)
    ARRAY JOIN found AS path, arrayEnumerate(found) AS idx
    WHERE indexOf(found, path) = idx
),
hooked AS (SELECT attempt_id FROM otel_inputs_coding_turn_hooks),
rows AS (
    SELECT attempt_id, part, path, F, captured_at, first_seen, '' AS report FROM listed
    UNION ALL
    SELECT l.attempt_id, l.part, l.path, l.F, l.captured_at, l.first_seen, l.report FROM loads AS l
    LEFT ANTI JOIN listed AS x ON x.attempt_id = l.attempt_id AND x.path = l.path
    UNION ALL
    SELECT n.attempt_id, n.part, n.path, map(), toDateTime64(0, 9), (toDateTime64(0, 9), toUInt64(n.idx)), ''
    FROM named AS n
    JOIN otel_inputs_coding_turn_table AS t ON t.attempt_id = n.attempt_id
    LEFT ANTI JOIN listed AS x ON x.attempt_id = n.attempt_id AND x.path = n.path
    WHERE t.runtime = 'gemini-cli' OR n.attempt_id NOT IN (SELECT attempt_id FROM hooked)
)
SELECT attempt_id, part, path, F, captured_at, first_seen, report,
       toInt32(row_number() OVER (PARTITION BY attempt_id ORDER BY part, first_seen, path) - 1) AS seq
FROM rows;

-- agent_attempt_inputs rows of the coding agents: each file with its loaded and delivered facts.
CREATE VIEW IF NOT EXISTS otel_inputs_coding_inputs AS
WITH f AS (
    SELECT f.attempt_id AS attempt_id, f.seq AS seq, f.part AS part, f.path AS path, f.F AS F, f.captured_at AS captured_at,
           f.report AS report, t.runtime AS runtime, t.label AS label, t.req_text AS req_text, t.req_whole AS req_whole,
           t.req_length AS req_length, t.req_note AS req_note, t.started_at AS attempt_started_at,
           t.attempt_id IN (SELECT attempt_id FROM otel_inputs_coding_turn_hooks) AS hooked, t.req_ref AS req_ref,
           nullIf(F['otel_inputs.input.sha256'], '') AS sha, toInt64OrNull(F['otel_inputs.input.size_bytes']) AS size
    FROM otel_inputs_coding_files AS f
    JOIN otel_inputs_coding_turn_table AS t ON t.attempt_id = f.attempt_id
),
loaded_reports AS (  -- Claude Code: each path its InstructionsLoaded reported for the turn's process, first report's words
    SELECT attempt_id, groupArray(path) AS paths, groupArray(words) AS words
    FROM (SELECT k.attempt_id AS attempt_id, h.A['otel_inputs.input.source_path'] AS path,
                 argMin(concat('Claude Code reported it loaded (InstructionsLoaded: memory_type ',
                               h.A['otel_inputs.instruction.memory_type'], ', load_reason ',
                               h.A['otel_inputs.instruction.load_reason'], ')'),
                        (h.ts, h.event, h.seq, h.trace_id, h.span_id)) AS words
          FROM (SELECT k.attempt_id AS attempt_id, tupleElement(k.anchor, 1) AS process, t.ended_at AS ended_at
                FROM otel_inputs_coding_turn_hooks AS k JOIN otel_inputs_coding_turn_table AS t ON t.attempt_id = k.attempt_id
                WHERE t.runtime = 'claude-code' AND tupleElement(k.anchor, 1) != '') AS k
          JOIN otel_inputs_coding_hooks AS h ON h.process_key = k.process
          WHERE h.event = 'otel_inputs.instruction_file' AND h.A['otel_inputs.instruction.discovery'] = 'reported_loaded'
            AND h.ts <= k.ended_at AND h.A['otel_inputs.input.source_path'] != ''
          GROUP BY attempt_id, path)
    GROUP BY attempt_id
),
d AS (
    SELECT f.attempt_id AS attempt_id, f.seq AS seq, f.part AS part, f.path AS path, f.F AS F, f.captured_at AS captured_at,
           f.runtime AS runtime, f.label AS label, f.req_text AS req_text, f.req_whole AS req_whole, f.req_length AS req_length,
           f.req_note AS req_note, f.attempt_started_at AS attempt_started_at, f.hooked AS hooked, f.sha AS sha, f.size AS size,
           coalesce(r.paths, []) AS loaded_paths, coalesce(r.words, []) AS loaded_words, ad.pair AS agent_side,
           otel_inputs_coding_delivered(f.runtime, f.label, f.req_text, f.req_whole, f.req_length, f.req_note, f.path, f.size, f.sha)
               AS delivered_pair,
           multiIf(f.runtime = 'codex',
                       ('not_reported_by_runtime', 'present at dispatch, loading not reported by Codex'),
                   f.runtime = 'claude-code' AND NOT f.hooked,
                       ('not_recorded', 'not recorded: no otel-inputs hook ran for this turn (Claude Code reports loads only to '
                                        || 'its InstructionsLoaded hook; otel-inputs setup claude-code installs it)'),
                   f.runtime = 'claude-code' AND has(loaded_paths, f.path),
                       ('reported', loaded_words[indexOf(loaded_paths, f.path)]),
                   f.runtime = 'claude-code',
                       ('not_reported', concat('present at dispatch; Claude Code did not report loading it',
                           if(endsWith(f.path, '/AGENTS.md') AND arrayExists(p -> endsWith(p, '/CLAUDE.md')
                                  AND substring(p, 1, length(p) - 10) = substring(f.path, 1, length(f.path) - 10), loaded_paths),
                              ' (the CLAUDE.md in the same folder was reported loaded)', ''))),
                   f.req_text IS NOT NULL AND position(otel_inputs_coding_unescape(assumeNotNull(f.req_text)),
                                                        concat('--- Context from: ', f.path, ' ---\n')) > 0,
                       ('reported', concat('Gemini CLI put it in the request (--- Context from: ', f.path, ' ---)')),
                   f.req_whole,
                       ('not_reported', 'present at dispatch; not in Gemini CLI''s recorded request (no --- Context from: block)'),
                   ('not_recorded', 'Gemini CLI''s report of loaded files was not recorded')) AS loaded_pair
    FROM f LEFT JOIN loaded_reports AS r ON r.attempt_id = f.attempt_id
    -- A Claude Code file: body read agent-side says whether the file is in it (the last record of a path wins).
    LEFT JOIN (SELECT A['otel_inputs.request_body.ref'] AS ref, A['otel_inputs.input.source_path'] AS path,
                      argMax((A['otel_inputs.instruction.delivered'], A['otel_inputs.instruction.delivered_detail']),
                             (ts, event, seq, trace_id, span_id)) AS pair
               FROM otel_inputs_coding_hooks
               WHERE event = 'otel_inputs.request_body' AND A['otel_inputs.instruction.delivered'] != ''
               GROUP BY ref, path) AS ad ON ad.ref = f.req_ref AND ad.path = f.path
)
SELECT if(part = 2, concat(attempt_id, '#request:', path), coalesce(nullIf(F['otel_inputs.input.id'], ''),
          concat(F['otel_inputs.hook.capture_id'], '#', path))) AS input_id,
       attempt_id, seq, if(position(path, '/') > 0, nullIf(splitByChar('/', path)[-1], ''), path) AS label_raw,
       coalesce(label_raw, path) AS label, 'instruction_file' AS source_kind,
       if(tupleElement(delivered, 1) IN ('whole', 'partial', 'differs', 'in_request'), 'inline', NULL) AS delivery_mode,
       path AS source_path, if(part = 2, NULL, nullIf(F['otel_inputs.input.snapshot_ref'], '')) AS snapshot_ref,
       if(part = 2, NULL, nullIf(F['otel_inputs.input.media_type'], '')) AS media_type,
       if(part = 2, NULL, nullIf(F['otel_inputs.input.preview_kind'], '')) AS preview_kind, size AS size_bytes, sha AS sha256,
       if(part = 2, 'not_applicable', nullIf(F['otel_inputs.input.capture_status'], '')) AS capture_status,
       if(part = 2, 'never_captured', nullIf(F['otel_inputs.input.artifact_status'], '')) AS artifact_status,
       if(part = 2, 'named in the request; no otel-inputs hook recorded it at dispatch', nullIf(F['otel_inputs.input.detail'], ''))
           AS detail,
       if(part = 2, NULL, captured_at) AS captured_at, CAST(NULL, 'Nullable(String)') AS row_problem, attempt_started_at,
       multiIf(runtime = 'codex', ('request_not_recorded', 'the request was not recorded by Codex: no Codex setting sends the request messages'),
               tupleElement(agent_side, 1) != '', agent_side, delivered_pair) AS delivered,
       tupleElement(loaded_pair, 1) AS loaded, tupleElement(loaded_pair, 2) AS loaded_detail,
       tupleElement(delivered, 1) AS delivered_state, tupleElement(delivered, 2) AS delivered_detail,
       if(part = 2, NULL, nullIf(F['otel_inputs.hook.capture_id'], '')) AS capture_attempt_id
FROM d;

-- agent_attempt_steps rows of the coding agents, seq in start-time order.
CREATE VIEW IF NOT EXISTS otel_inputs_coding_steps AS
WITH s AS (
    SELECT attempt_id, span_id, trace_id, parent_span_id, step_kind, operation_name, span_name, provider_name, request_model,
           response_model, started_at, ended_at, input_tokens, output_tokens, tool_name, tool_call_id, tool_arguments, status,
           auxiliary, request_record FROM otel_inputs_claude_steps
    UNION ALL
    SELECT attempt_id, span_id, trace_id, parent_span_id, step_kind, operation_name, span_name, provider_name, request_model,
           response_model, started_at, ended_at, input_tokens, output_tokens, tool_name, tool_call_id, tool_arguments, status,
           auxiliary, request_record FROM otel_inputs_codex_steps
    UNION ALL
    SELECT attempt_id, span_id, trace_id, parent_span_id, step_kind, operation_name, span_name, provider_name, request_model,
           response_model, started_at, ended_at, input_tokens, output_tokens, tool_name, tool_call_id, tool_arguments, status,
           auxiliary, request_record FROM otel_inputs_gemini_steps
)
SELECT s.attempt_id AS attempt_id, s.span_id AS span_id, s.trace_id AS trace_id, s.parent_span_id AS parent_span_id,
       s.step_kind AS step_kind, s.operation_name AS operation_name, s.span_name AS span_name, s.provider_name AS provider_name,
       s.request_model AS request_model, s.response_model AS response_model, s.started_at AS started_at, s.ended_at AS ended_at,
       s.input_tokens AS input_tokens, s.output_tokens AS output_tokens, s.tool_name AS tool_name, s.tool_call_id AS tool_call_id,
       s.tool_arguments AS tool_arguments, s.status AS status, s.auxiliary AS auxiliary, s.request_record AS request_record,
       toInt32(row_number() OVER (PARTITION BY s.attempt_id ORDER BY s.started_at, s.span_id) - 1) AS seq,
       t.started_at AS attempt_started_at
FROM s JOIN otel_inputs_coding_turn_table AS t ON t.attempt_id = s.attempt_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_coding_step_table
REFRESH EVERY 10 SECOND DEPENDS ON otel_inputs_coding_turn_table ENGINE = MergeTree ORDER BY (attempt_id, seq)
AS SELECT * FROM otel_inputs_coding_steps;

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_coding_input_table
REFRESH EVERY 10 SECOND DEPENDS ON otel_inputs_coding_turn_table ENGINE = MergeTree ORDER BY (attempt_id, seq)
AS SELECT * FROM otel_inputs_coding_inputs;

-- agent_attempts rows of the coding agents, numbered in their session (across processes: --continue, resume).
CREATE VIEW IF NOT EXISTS otel_inputs_coding_attempts AS
WITH files AS (
    SELECT attempt_id, count() AS n, countIf(capture_status = 'captured') AS captured FROM otel_inputs_coding_input_table
    GROUP BY attempt_id
),
hooked AS (SELECT attempt_id, tupleElement(anchor, 3) AS gaps FROM otel_inputs_coding_turn_hooks),
lineage AS (
    SELECT attempt_id,
           toInt32(row_number() OVER (PARTITION BY session_id ORDER BY started_at, attempt_id)) AS turn_index,
           nullIf(lagInFrame(attempt_id) OVER (PARTITION BY session_id ORDER BY started_at, attempt_id
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), '') AS previous_turn_attempt_id
    FROM otel_inputs_coding_turn_table
)
SELECT t.attempt_id AS attempt_id, t.runtime AS runtime, t.source_format AS source_format, t.trace_id AS trace_id,
       t.span_id AS span_id, t.session_id AS session_id, t.started_at AS started_at, t.ended_at AS ended_at,
       t.service_name AS service_name, t.status AS status, t.prompt AS prompt, t.agent_name AS agent_name,
       t.provider_name AS provider_name, t.request_model AS request_model, t.req_system AS req_system,
       t.req_messages AS req_messages, if(t.session_id IS NULL, NULL, l.turn_index) AS turn_index,
       if(t.session_id IS NULL, NULL, l.previous_turn_attempt_id) AS previous_turn_attempt_id,
       t.attempt_id IN (SELECT attempt_id FROM hooked) AS is_hooked, coalesce(h.gaps, '') AS gaps, coalesce(f.n, 0) AS file_count,
       multiIf(is_hooked AND gaps != '', 'partial', is_hooked, 'complete',
               t.runtime = 'gemini-cli' AND file_count > 0, 'partial', 'not_recorded') AS input_coverage,
       multiIf(is_hooked, nullIf(gaps, ''),
               t.runtime = 'claude-code', 'instruction files present at dispatch: not recorded (no otel-inputs hook record for '
                                          || 'this turn; otel-inputs setup claude-code installs it)',
               t.runtime = 'codex', 'instruction files present at dispatch: not recorded (no otel-inputs hook record for this '
                                    || 'turn; Codex itself reports none; otel-inputs setup codex installs the hook)',
               file_count > 0, 'instruction files present at dispatch: not recorded (no otel-inputs hook record for this turn; '
                               || 'otel-inputs setup gemini installs it); the files below are those Gemini CLI put in its request',
               'instruction files present at dispatch: not recorded (no otel-inputs hook record for this turn; otel-inputs setup '
               || 'gemini installs it)') AS coverage_reason,
       if(input_coverage = 'not_recorded', NULL, toInt64(file_count)) AS declared_input_count,
       if(input_coverage = 'not_recorded', NULL, toInt64(coalesce(f.captured, 0))) AS captured_input_count,
       concat(if(t.prompt IS NULL, concat('prompt text: not recorded (', t.prompt_switch, '); '), ''), 'request messages: ',
              if(t.req_note IS NOT NULL AND t.req_note != '', t.req_note, 'not recorded')) AS messages_note
FROM otel_inputs_coding_turn_table AS t
LEFT JOIN lineage AS l ON l.attempt_id = t.attempt_id
LEFT JOIN hooked AS h ON h.attempt_id = t.attempt_id
LEFT JOIN files AS f ON f.attempt_id = t.attempt_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_coding_attempt_table
REFRESH EVERY 10 SECOND DEPENDS ON otel_inputs_coding_input_table ENGINE = MergeTree ORDER BY attempt_id
AS SELECT * FROM otel_inputs_coding_attempts;

-- C1: one row per GenAI span nested under an attempt, seq in start-time order.
CREATE VIEW IF NOT EXISTS agent_attempt_steps AS
SELECT o.attempt_id AS attempt_id, g.span_id AS span_id, g.trace_id AS trace_id, g.parent_span_id AS parent_span_id,
       toInt32(row_number() OVER (PARTITION BY g.trace_id, o.attempt_id ORDER BY g.started_at, g.span_id) - 1) AS seq,
       g.step_kind AS step_kind, g.operation_name AS operation_name, g.span_name AS span_name,
       g.provider_name AS provider_name, g.request_model AS request_model, g.response_model AS response_model,
       g.started_at AS started_at, g.ended_at AS ended_at, g.input_tokens AS input_tokens, g.output_tokens AS output_tokens,
       g.tool_name AS tool_name, g.tool_call_id AS tool_call_id, g.tool_arguments AS tool_arguments,
       nullIf(lower(g.status), '') AS status, o.started_at AS attempt_started_at,
       -- A coding agent's steps only (docs/coding-agents.md): NULL on every other step.
       CAST(NULL, 'Nullable(String)') AS auxiliary, CAST(NULL, 'Nullable(String)') AS request_record,
       g.system_prompt AS system_prompt, g.user_prompt AS user_prompt, g.input_messages_json AS input_messages_json
FROM otel_inputs_span_owner_rows AS w FINAL
JOIN otel_inputs_genai_span_rows AS g FINAL ON g.trace_id = w.trace_id AND g.span_id = w.span_id
-- o joined on g's trace (not w's): the trace filter then reaches o's sort key too.
JOIN otel_inputs_genai_span_rows AS o FINAL ON o.trace_id = g.trace_id AND o.span_id = w.owner_span_id
-- A container below the attempt (an OpenInference CHAIN: a LangGraph node or runnable) is not a step.
WHERE w.owner_span_id != w.span_id AND g.step_kind != 'container'
UNION ALL
-- A coding agent's steps (docs/coding-agents.md).
SELECT attempt_id, span_id, trace_id, parent_span_id, seq, step_kind, operation_name, span_name, provider_name, request_model,
       response_model, started_at, ended_at, input_tokens, output_tokens, tool_name, tool_call_id, tool_arguments, status,
       attempt_started_at, auxiliary, request_record, NULL, NULL, NULL
FROM otel_inputs_coding_step_table;

-- Input rows of packet attempts (exporter/_rows.py input_rows), malformed events kept visible.
CREATE VIEW IF NOT EXISTS agent_attempt_inputs AS
SELECT input_id, attempt_id, seq, label, source_kind, delivery_mode, source_path, snapshot_ref, media_type, preview_kind,
       size_bytes, sha256, capture_status, artifact_status, detail, captured_at, row_problem, attempt_started_at,
       trace_id, span_id,
       -- A coding agent's instruction files only (docs/coding-agents.md): NULL on packet inputs.
       CAST(NULL, 'Nullable(String)') AS loaded, CAST(NULL, 'Nullable(String)') AS loaded_detail,
       CAST(NULL, 'Nullable(String)') AS delivered, CAST(NULL, 'Nullable(String)') AS delivered_detail,
       CAST(NULL, 'Nullable(String)') AS capture_attempt_id
FROM otel_inputs_input_rows FINAL
UNION ALL
-- A coding agent's instruction files (docs/coding-agents.md).
SELECT input_id, attempt_id, seq, label, source_kind, delivery_mode, source_path, snapshot_ref, media_type, preview_kind,
       size_bytes, sha256, capture_status, artifact_status, detail, captured_at, row_problem, attempt_started_at,
       CAST(NULL, 'Nullable(String)'), CAST(NULL, 'Nullable(String)'), loaded, loaded_detail, delivered_state, delivered_detail,
       capture_attempt_id
FROM otel_inputs_coding_input_table;

-- Every GenAI span that is an attempt, with coverage settled (exporter/_rows.py finish_coverage):
-- its row's fields were derived as the span was inserted; what depends on the rest of the trace
-- (whether it is an attempt, its first model step's messages) is joined here, by the trace.
CREATE VIEW IF NOT EXISTS agent_attempts AS
SELECT g.attempt_id AS attempt_id, g.run_id AS run_id, g.session_id AS session_id, g.phase AS phase,
       g.agent_name AS agent_name, g.provider_name AS provider_name, g.request_model AS request_model,
       g.task_prompt AS task_prompt, g.task_source_kind AS task_source_kind, g.task_source_path AS task_source_path,
       g.task_size_bytes AS task_size_bytes, g.task_sha256 AS task_sha256, g.send_kind AS send_kind,
       g.turn_index AS turn_index, g.previous_turn_attempt_id AS previous_turn_attempt_id,
       g.retry_of_attempt_id AS retry_of_attempt_id, g.system_prompt AS system_prompt, g.user_prompt AS user_prompt,
       g.input_packet_version AS input_packet_version, g.input_coverage AS input_coverage,
       g.coverage_reason AS coverage_reason, g.declared_input_count AS declared_input_count,
       g.captured_input_count AS captured_input_count, g.omitted_input_count AS omitted_input_count,
       g.item_count AS item_count, g.capture_decision AS capture_decision, g.capture_gap_reason AS capture_gap_reason,
       g.started_at AS started_at, g.ended_at AS ended_at, g.status AS status, g.status_message AS status_message,
       g.trace_id AS trace_id, g.span_id AS span_id, g.service_name AS service_name, g.source_format AS source_format,
       CAST(NULL, 'Nullable(Int32)') AS dropped_events_count, CAST(NULL, 'Nullable(Int32)') AS dropped_attributes_count,
       g.parent_span_id AS parent_span_id, g.span_name AS span_name, g.operation_name AS operation_name,
       g.step_kind AS step_kind, g.response_model AS response_model, g.input_tokens AS input_tokens,
       g.output_tokens AS output_tokens, g.tool_name AS tool_name, g.tool_call_id AS tool_call_id,
       g.tool_arguments AS tool_arguments, g.input_messages_json AS input_messages_json, g.messages_note AS messages_note,
       -- The first step's messages stand in only for an attempt span that recorded none of its own.
       g.system_prompt IS NULL AND g.user_prompt IS NULL AND g.input_messages_json IS NULL
           AND tupleElement(f.first_step, 1) != '' AS from_step,
       if(from_step, tupleElement(f.first_step, 2), NULL) AS step_system_prompt,
       if(from_step, tupleElement(f.first_step, 3), NULL) AS step_user_prompt,
       if(from_step, tupleElement(f.first_step, 4), NULL) AS step_input_messages_json,
       if(from_step, tupleElement(f.first_step, 1), NULL) AS step_messages_span_id,
       'dropped_events_count and dropped_attributes_count are not in the stock otel_traces schema (NULL here), so a coverage '
       || 'reason for dropped span events is not given; attribute types are not either (every value is text)' AS projection_gaps
FROM otel_inputs_genai_span_rows AS g FINAL
-- A join, not IN (subquery): a filter on the trace then reaches the ownership table's sort key.
INNER JOIN (SELECT trace_id, span_id FROM otel_inputs_span_owner_rows FINAL WHERE owner_span_id = span_id) AS w
    ON w.trace_id = g.trace_id AND w.span_id = g.span_id
-- The attempt's first model step (not an embedding) in step order, for its messages.
LEFT JOIN (
    SELECT w.trace_id AS trace_id, w.owner_span_id AS owner_span_id,
           argMin(tuple(s.span_id, s.system_prompt, s.user_prompt, s.input_messages_json), tuple(s.started_at, s.span_id)) AS first_step
    FROM otel_inputs_span_owner_rows AS w FINAL
    INNER JOIN otel_inputs_genai_span_rows AS s FINAL ON s.trace_id = w.trace_id AND s.span_id = w.span_id
    WHERE w.owner_span_id != w.span_id AND s.step_kind = 'model_call' AND coalesce(s.operation_name, '') != 'embeddings'
    GROUP BY w.trace_id, w.owner_span_id
) AS f ON f.trace_id = g.trace_id AND f.owner_span_id = g.span_id
UNION ALL
-- A coding agent's turns (docs/coding-agents.md): one attempt per user turn.
SELECT attempt_id, session_id, session_id, NULL, agent_name, provider_name, request_model, NULL, NULL, NULL, NULL, NULL, NULL,
       turn_index, previous_turn_attempt_id, NULL, req_system, prompt, NULL, input_coverage, coverage_reason, declared_input_count,
       captured_input_count, NULL, NULL, NULL, NULL, started_at, ended_at, status, NULL, trace_id, span_id, service_name,
       source_format, NULL, NULL, NULL, NULL, NULL, 'agent', NULL, NULL, NULL, NULL, NULL, NULL, req_messages, messages_note,
       false, NULL, NULL, NULL, NULL,
       'dropped_events_count and dropped_attributes_count are not in the stock otel_traces schema (NULL here), so a coverage '
       || 'reason for dropped span events is not given; attribute types are not either (every value is text)'
FROM otel_inputs_coding_attempt_table;

-- One row per exchange-part event of an attempt (exporter/_rows.py part_rows); a step's parts go
-- with its attempt row in the DuckDB path, i.e. they are not shown, and neither are they here.
CREATE VIEW IF NOT EXISTS agent_exchange_parts AS
SELECT p.attempt_id AS attempt_id, p.part_name AS part_name, p.capture AS capture, p.reason AS reason,
       p.dispatch AS dispatch, p.ref AS ref, p.sha256 AS sha256, p.size_bytes AS size_bytes,
       p.persistence AS persistence, p.detail AS detail, p.recorded_at AS recorded_at,
       p.attempt_started_at AS attempt_started_at, p.row_problem AS row_problem, p.trace_id AS trace_id
FROM otel_inputs_part_rows AS p FINAL
INNER JOIN (SELECT trace_id, span_id FROM otel_inputs_span_owner_rows FINAL WHERE owner_span_id = span_id) AS w
    ON w.trace_id = p.trace_id AND w.span_id = p.span_id;

-- The GenAI log records the messages view reads, derived as the Collector inserts them: one row
-- per record (a record inserted twice by a retried export is one), its message piece as JSON.
CREATE TABLE IF NOT EXISTS otel_inputs_log_pieces (
    trace_id String, span_id String, ts DateTime64(9), event_name LowCardinality(String), record_key UInt64,
    details Bool, piece String, input_messages Nullable(String), system_instructions Nullable(String),
    -- The texts the messages view shows, read from this record alone (DuckDB migration 11's
    -- otel_inputs_role_text / otel_inputs_parts_text): a per-message record's role and text; an
    -- operation-details record's user and system texts and its parsed system instructions.
    piece_valid Bool, piece_role LowCardinality(String), piece_text Nullable(String),
    details_user Nullable(String), details_system Nullable(String), instructions_text Nullable(String)
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id, ts, event_name, record_key);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_log_pieces_mv TO otel_inputs_log_pieces AS
SELECT TraceId AS trace_id, SpanId AS span_id, Timestamp AS ts,
       if(EventName != '', EventName, LogAttributes['event.name']) AS event_name,
       cityHash64(EventName, Body, mapKeys(LogAttributes), mapValues(LogAttributes)) AS record_key,
       event_name = 'gen_ai.client.inference.operation.details' AS details,
       concat('{"role":', otel_inputs_json_str(multiIf(event_name = 'gen_ai.system.message', 'system',
                  event_name = 'gen_ai.user.message', 'user', event_name = 'gen_ai.assistant.message', 'assistant', 'tool')),
              ',"content":', if(isValidJSON(Body) AND JSONType(Body) = 'Object',
                                if(JSONHas(Body, 'content'), JSONExtractRaw(Body, 'content'), 'null'),
                                otel_inputs_json_str(Body)), '}') AS piece,
       otel_inputs_attr(LogAttributes, 'gen_ai.input.messages') AS input_messages,
       otel_inputs_attr(LogAttributes, 'gen_ai.system_instructions') AS system_instructions,
       isValidJSON(piece) AS piece_valid,
       multiIf(event_name = 'gen_ai.system.message', 'system', event_name = 'gen_ai.user.message', 'user',
               event_name = 'gen_ai.assistant.message', 'assistant', 'tool') AS piece_role,
       otel_inputs_log_parts_text(if(JSONType(piece, 'content') NOT IN ('Null', ''), JSONExtractRaw(piece, 'content'), NULL)) AS piece_text,
       otel_inputs_role_text(input_messages, 'user') AS details_user,
       otel_inputs_role_text(input_messages, 'system') AS details_system,
       if(system_instructions IS NOT NULL AND isValidJSON(assumeNotNull(system_instructions)),
          otel_inputs_log_parts_text(system_instructions), NULL) AS instructions_text
FROM otel_logs
WHERE TraceId != '' AND event_name IN ('gen_ai.client.inference.operation.details', 'gen_ai.system.message', 'gen_ai.user.message',
                                       'gen_ai.assistant.message', 'gen_ai.tool.message');

-- C2: the attempt's exact messages, whichever of span and GenAI log event arrived first (DuckDB
-- migration 11's agent_attempt_messages, rule for rule).
CREATE VIEW IF NOT EXISTS agent_attempt_messages AS
WITH ev AS (
    -- The attempt's records: on its span or on its first model step's, within its time (one pass
    -- over agent_attempts; an attempt without records keeps one row with hit = 0).
    SELECT a.attempt_id AS attempt_id, a.trace_id AS trace_id, a.span_id AS span_id,
           a.system_prompt AS a_system, a.user_prompt AS a_user, a.input_messages_json AS a_json,
           a.messages_note AS a_note, a.step_system_prompt AS a_step_system, a.step_user_prompt AS a_step_user,
           a.step_input_messages_json AS a_step_json, a.step_messages_span_id AS a_step_span,
           l.span_id = a.span_id AS on_attempt, l.ts AS ts, l.details AS details, l.piece AS piece,
           l.input_messages AS input_messages, l.system_instructions AS system_instructions,
           l.piece_valid AS piece_valid, l.piece_role AS piece_role, l.piece_text AS piece_text,
           l.details_user AS details_user, l.details_system AS details_system, l.instructions_text AS instructions_text,
           l.trace_id != '' AND l.ts >= a.started_at AND l.ts <= a.ended_at
               AND (l.span_id = a.span_id OR l.span_id = coalesce(a.step_messages_span_id, '')) AS hit
    FROM agent_attempts AS a
    LEFT JOIN (SELECT * FROM otel_inputs_log_pieces FINAL) AS l ON l.trace_id = a.trace_id
),
sides AS (
    -- Per side (records on the attempt span, or on its first model step): the newest
    -- operation-details record, else the per-message records in time order.
    SELECT trace_id, attempt_id, span_id, on_attempt AS side,
        any(a_system) AS a_system, any(a_user) AS a_user, any(a_json) AS a_json, any(a_note) AS a_note,
        any(a_step_system) AS a_step_system, any(a_step_user) AS a_step_user, any(a_step_json) AS a_step_json,
        any(a_step_span) AS a_step_span,
        countIf(hit) > 0 AS has, countIf(hit AND details AND input_messages IS NOT NULL) > 0 AS det,
        countIf(hit AND NOT details) > 0 AS pcs, countIf(hit AND NOT details AND NOT piece_valid) > 0 AS bad,
        argMaxIf(tuple(input_messages, details_user, details_system), ts, hit AND details AND input_messages IS NOT NULL) AS d,
        arraySort(x -> x.1, groupArrayIf((ts, piece, piece_role, piece_text), hit AND NOT details)) AS p,
        multiIf(det, tupleElement(d, 1), pcs, concat('[', arrayStringConcat(arrayMap(x -> x.2, p), ','), ']'), NULL) AS json,
        -- An unparseable document reads as itself for the user text, as nothing for the system text.
        multiIf(det, tupleElement(d, 2), NOT pcs, NULL, bad, json,
                nullIf(arrayStringConcat(arrayMap(x -> assumeNotNull(x.4), arrayFilter(x -> x.3 = 'user' AND x.4 IS NOT NULL, p)), '\n\n'), '')) AS user_text,
        multiIf(det, tupleElement(d, 3), NOT pcs OR bad, NULL,
                nullIf(arrayStringConcat(arrayMap(x -> assumeNotNull(x.4), arrayFilter(x -> x.3 = 'system' AND x.4 IS NOT NULL, p)), '\n\n'), '')) AS roles_system,
        if(countIf(hit AND details AND system_instructions IS NOT NULL) > 0,
           tupleElement(argMaxIf(tuple(instructions_text), ts, hit AND details AND system_instructions IS NOT NULL), 1), NULL) AS instructions
    FROM ev
    GROUP BY trace_id, attempt_id, span_id, on_attempt
),
m AS (
    SELECT trace_id, attempt_id, span_id,
        any(a_system) AS system_prompt, any(a_user) AS user_prompt, any(a_json) AS input_messages_json,
        any(a_note) AS messages_note, any(a_step_system) AS step_system_prompt,
        any(a_step_user) AS step_user_prompt, any(a_step_json) AS step_input_messages_json,
        any(a_step_span) AS step_messages_span_id,
        (system_prompt IS NOT NULL OR user_prompt IS NOT NULL OR input_messages_json IS NOT NULL) AS own,
        (step_system_prompt IS NOT NULL OR step_user_prompt IS NOT NULL OR step_input_messages_json IS NOT NULL) AS step_own,
        maxIf(has, side) AS has_la, maxIf(has, NOT side) AS has_ls,
        -- The attempt span's records when it has any, else its first model step's.
        argMax(tuple(json, user_text, coalesce(instructions, roles_system)), tuple(has, side)) AS chosen,
        tupleElement(chosen, 1) AS log_json, tupleElement(chosen, 2) AS log_user, tupleElement(chosen, 3) AS log_system
    FROM sides
    GROUP BY trace_id, attempt_id, span_id
)
SELECT attempt_id,
       multiIf(own, system_prompt, has_la, log_system, step_own, step_system_prompt, log_system) AS system_prompt,
       multiIf(own, user_prompt, has_la, log_user, step_own, step_user_prompt, log_user) AS user_prompt,
       multiIf(own, input_messages_json, has_la, log_json, step_own, step_input_messages_json, log_json) AS input_messages_json,
       multiIf(own, 'attempt_span', has_la, 'log_event', 'model_step') AS messages_source,
       nullIf(arrayStringConcat(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, [
           messages_note,
           if(own AND has_la AND ((log_user IS NOT NULL AND (user_prompt IS NULL OR log_user != user_prompt))
                                  OR (log_system IS NOT NULL AND (system_prompt IS NULL OR log_system != system_prompt))),
              'a GenAI log event for this span recorded different messages; the span''s are shown', NULL),
           if(NOT own AND NOT has_la AND step_own,
              concat('the attempt span recorded no messages: these are what its first model step (span ', step_messages_span_id, ') sent'), NULL),
           if(NOT own AND NOT has_la AND NOT step_own,
              concat('the attempt span recorded no messages: these are from the GenAI log event of its first model step (span ', step_messages_span_id, ')'), NULL)
       ])), '; '), '') AS messages_note,
       trace_id
FROM m
WHERE own OR has_la OR step_own OR has_ls;

-- Spans the projection does not map (no otel-inputs packet, gen_ai.operation.name, OpenInference
-- kind or OpenLLMetry request type): they stay in otel_traces; genai_like flags those that carry
-- GenAI-looking attributes all the same, the ones worth a look.
CREATE VIEW IF NOT EXISTS otel_inputs_unmapped_spans AS
SELECT s.TraceId AS trace_id, s.SpanId AS span_id, s.SpanName AS span_name, s.ServiceName AS service_name,
       s.Timestamp AS started_at,
       arrayExists(k -> startsWith(k, 'gen_ai.') OR startsWith(k, 'llm.') OR startsWith(k, 'otel_inputs.'), mapKeys(s.SpanAttributes)) AS genai_like
FROM otel_inputs_spans s
LEFT ANTI JOIN otel_inputs_genai_spans g ON g.trace_id = s.TraceId AND g.span_id = s.SpanId;
