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

-- C1: one row per GenAI span nested under an attempt, seq in start-time order.
CREATE VIEW IF NOT EXISTS agent_attempt_steps AS
SELECT o.attempt_id AS attempt_id, g.span_id AS span_id, g.trace_id AS trace_id, g.parent_span_id AS parent_span_id,
       toInt32(row_number() OVER (PARTITION BY g.trace_id, o.attempt_id ORDER BY g.started_at, g.span_id) - 1) AS seq,
       g.step_kind AS step_kind, g.operation_name AS operation_name, g.span_name AS span_name,
       g.provider_name AS provider_name, g.request_model AS request_model, g.response_model AS response_model,
       g.started_at AS started_at, g.ended_at AS ended_at, g.input_tokens AS input_tokens, g.output_tokens AS output_tokens,
       g.tool_name AS tool_name, g.tool_call_id AS tool_call_id, g.tool_arguments AS tool_arguments,
       nullIf(lower(g.status), '') AS status, o.started_at AS attempt_started_at,
       g.system_prompt AS system_prompt, g.user_prompt AS user_prompt, g.input_messages_json AS input_messages_json
FROM otel_inputs_span_owner_rows AS w FINAL
JOIN otel_inputs_genai_span_rows AS g FINAL ON g.trace_id = w.trace_id AND g.span_id = w.span_id
-- o joined on g's trace (not w's): the trace filter then reaches o's sort key too.
JOIN otel_inputs_genai_span_rows AS o FINAL ON o.trace_id = g.trace_id AND o.span_id = w.owner_span_id
-- A container below the attempt (an OpenInference CHAIN: a LangGraph node or runnable) is not a step.
WHERE w.owner_span_id != w.span_id AND g.step_kind != 'container';

-- Input rows of packet attempts (exporter/_rows.py input_rows), malformed events kept visible.
CREATE VIEW IF NOT EXISTS agent_attempt_inputs AS
SELECT input_id, attempt_id, seq, label, source_kind, delivery_mode, source_path, snapshot_ref, media_type, preview_kind,
       size_bytes, sha256, capture_status, artifact_status, detail, captured_at, row_problem, attempt_started_at,
       trace_id, span_id
FROM otel_inputs_input_rows FINAL;

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
) AS f ON f.trace_id = g.trace_id AND f.owner_span_id = g.span_id;

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
