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
    A Map(LowCardinality(String), String), event_names Array(LowCardinality(String)), event_times Array(DateTime64(9)),
    event_attrs Array(Map(LowCardinality(String), String)),
    -- The viewer finds an attempt's (or a session's) traces by id first, then reads them by the sort key.
    INDEX attempt_id_idx attempt_id TYPE bloom_filter GRANULARITY 1,
    INDEX session_id_idx session_id TYPE bloom_filter GRANULARITY 1
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_genai_span_rows_mv TO otel_inputs_genai_span_rows AS
WITH s AS (
    SELECT *, SpanAttributes AS A,
        otel_inputs_source_format(A) AS source_format,
        arrayFirstIndex((nm, at) -> nm IN ('gen_ai.client.inference.operation.details', 'gen_ai.content.prompt')
                AND (mapContains(at, 'gen_ai.system_instructions') OR mapContains(at, 'gen_ai.input.messages')
                     OR mapContains(at, 'gen_ai.prompt')), `Events.Name`, `Events.Attributes`) AS ev_at,
        if(ev_at > 0, `Events.Attributes`[ev_at], map()) AS EV,
        otel_inputs_flat(A, 'gen_ai.prompt', 'role', 'content') AS llm_flat,
        otel_inputs_flat(A, 'llm.input_messages', 'message.role', 'message.content') AS oi_flat,
        multiIf(mapContains(A, 'gen_ai.system_instructions') OR mapContains(A, 'gen_ai.input.messages'), 'attrs',
                ev_at > 0 AND (mapContains(EV, 'gen_ai.system_instructions') OR mapContains(EV, 'gen_ai.input.messages')), 'event',
                ev_at > 0, 'event_prompt',
                mapContains(A, 'gen_ai.prompt'), 'prompt',
                length(llm_flat) > 0, 'openllmetry',
                length(oi_flat) > 0, 'openinference',
                mapContains(A, 'pydantic_ai.all_messages'), 'pydantic_ai',
                mapContains(A, 'input.value'), 'input_value', '') AS enc,
        multiIf(enc = 'attrs', A, enc = 'event', EV, map()) AS G,
        multiIf(enc = 'pydantic_ai', A['pydantic_ai.all_messages'], enc IN ('attrs', 'event'), otel_inputs_attr(G, 'gen_ai.input.messages'), NULL) AS g_in,
        otel_inputs_messages_text(otel_inputs_attr(G, 'gen_ai.system_instructions'), '') AS g_sys0,
        multiIf(source_format = 'openinference', multiIf(A['openinference.span.kind'] = 'LLM', 'chat',
                    A['openinference.span.kind'] = 'EMBEDDING', 'embeddings', A['openinference.span.kind'] = 'AGENT', 'invoke_agent',
                    A['openinference.span.kind'] = 'TOOL', 'execute_tool', ''),
                source_format = 'openllmetry', multiIf(A['llm.request.type'] = 'completion', 'text_completion',
                    A['llm.request.type'] = 'embedding', 'embeddings', 'chat'),
                A['gen_ai.operation.name']) AS op
    FROM otel_traces
    WHERE source_format IS NOT NULL
)
SELECT
    if(source_format = 'otel_inputs', coalesce(nullIf(otel_inputs_attr(A, 'otel_inputs.attempt.id'), ''), SpanId), SpanId) AS attempt_id,
    TraceId AS trace_id, SpanId AS span_id, source_format, source_format = 'otel_inputs' AS packet,
    Timestamp AS started_at, Timestamp + toIntervalNanosecond(Duration) AS ended_at,
    nullIf(ParentSpanId, '') AS parent_span_id, nullIf(SpanName, '') AS span_name,
    coalesce(nullIf(otel_inputs_attr(A, 'gen_ai.conversation.id'), ''), otel_inputs_attr(A, 'session.id')) AS session_id,
    otel_inputs_attr(A, 'gen_ai.agent.name') AS agent_name,
    coalesce(nullIf(otel_inputs_attr(A, 'gen_ai.provider.name'), ''), nullIf(otel_inputs_attr(A, 'gen_ai.system'), ''),
             nullIf(otel_inputs_attr(A, 'llm.provider'), ''), otel_inputs_attr(A, 'llm.system')) AS provider_name,
    coalesce(nullIf(otel_inputs_attr(A, 'gen_ai.request.model'), ''), otel_inputs_attr(A, 'llm.model_name')) AS request_model,
    otel_inputs_attr(A, 'gen_ai.operation.name') AS operation_name,
    multiIf(source_format = 'otel_inputs', 'agent', op IN ('chat', 'text_completion', 'generate_content', 'embeddings'), 'model_call',
            op = 'execute_tool', 'tool_call', op = 'invoke_agent', 'agent', 'other') AS step_kind,
    otel_inputs_attr(A, 'gen_ai.response.model') AS response_model,
    multiIf(mapContains(A, 'gen_ai.usage.input_tokens'), otel_inputs_int(A['gen_ai.usage.input_tokens'], 9223372036854775807),
            mapContains(A, 'gen_ai.usage.prompt_tokens'), otel_inputs_int(A['gen_ai.usage.prompt_tokens'], 9223372036854775807),
            mapContains(A, 'llm.token_count.prompt'), otel_inputs_int(A['llm.token_count.prompt'], 9223372036854775807), NULL) AS input_tokens,
    multiIf(mapContains(A, 'gen_ai.usage.output_tokens'), otel_inputs_int(A['gen_ai.usage.output_tokens'], 9223372036854775807),
            mapContains(A, 'gen_ai.usage.completion_tokens'), otel_inputs_int(A['gen_ai.usage.completion_tokens'], 9223372036854775807),
            mapContains(A, 'llm.token_count.completion'), otel_inputs_int(A['llm.token_count.completion'], 9223372036854775807), NULL) AS output_tokens,
    coalesce(nullIf(otel_inputs_attr(A, 'gen_ai.tool.name'), ''), if(source_format = 'openinference', otel_inputs_attr(A, 'tool.name'), NULL)) AS tool_name,
    otel_inputs_attr(A, 'gen_ai.tool.call.id') AS tool_call_id,
    multiIf(mapContains(A, 'gen_ai.tool.call.arguments'), A['gen_ai.tool.call.arguments'],
            A['openinference.span.kind'] = 'TOOL', otel_inputs_attr(A, 'input.value'), NULL) AS tool_arguments,
    -- The span's own messages, from the first encoding it carries (exporter/_rows.py span_messages).
    multiIf(enc IN ('attrs', 'event'), coalesce(g_sys0, if(otel_inputs_has_role(g_in, 'system'), otel_inputs_messages_text(g_in, 'system'), NULL)),
            enc = 'pydantic_ai', if(otel_inputs_has_role(g_in, 'system'), otel_inputs_messages_text(g_in, 'system'), NULL),
            enc = 'openllmetry', otel_inputs_flat_role(llm_flat, 'system'),
            enc = 'openinference', otel_inputs_flat_role(oi_flat, 'system'), NULL) AS system_prompt,
    multiIf(enc IN ('attrs', 'event', 'pydantic_ai'), otel_inputs_messages_text(g_in, 'user'),
            enc = 'event_prompt', otel_inputs_messages_text(EV['gen_ai.prompt'], 'user'),
            enc = 'prompt', otel_inputs_messages_text(A['gen_ai.prompt'], 'user'),
            enc = 'openllmetry', otel_inputs_flat_role(llm_flat, 'user'),
            enc = 'openinference', otel_inputs_flat_role(oi_flat, 'user'),
            enc = 'input_value', A['input.value'], NULL) AS user_prompt,
    multiIf(enc IN ('attrs', 'event', 'pydantic_ai'), g_in, enc = 'event_prompt', EV['gen_ai.prompt'],
            enc = 'prompt', A['gen_ai.prompt'], enc = 'openllmetry', otel_inputs_flat_json(llm_flat),
            enc = 'openinference', otel_inputs_flat_json(oi_flat), NULL) AS input_messages_json,
    multiIf(enc = 'pydantic_ai', 'from pydantic_ai.all_messages: the whole agent run, its replies and tool results included',
            enc = 'input_value', 'from OpenInference input.value (the span''s input as one text)', NULL) AS messages_note,
    StatusCode AS status, nullIf(StatusMessage, '') AS status_message, nullIf(ServiceName, '') AS service_name,
    A, `Events.Name` AS event_names, `Events.Timestamp` AS event_times, `Events.Attributes` AS event_attrs
FROM s;

CREATE VIEW IF NOT EXISTS otel_inputs_genai_spans AS
SELECT * FROM otel_inputs_genai_span_rows FINAL;

-- Every span's parent link and kind (0 ordinary, 1 GenAI, 2 packet), narrow, for the ancestry walk
-- below (kept as spans are inserted).
CREATE TABLE IF NOT EXISTS otel_inputs_span_links (
    trace_id String, span_id String, parent_span_id String, kind UInt8
) ENGINE = ReplacingMergeTree
ORDER BY (trace_id, span_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_span_links_mv TO otel_inputs_span_links AS
SELECT TraceId AS trace_id, SpanId AS span_id, ParentSpanId AS parent_span_id,
       multiIf(otel_inputs_source_format(SpanAttributes) IS NULL, 0, otel_inputs_source_format(SpanAttributes) = 'otel_inputs', 2, 1) AS kind
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
               multiIf(otel_inputs_source_format(SpanAttributes) IS NULL, 0, otel_inputs_source_format(SpanAttributes) = 'otel_inputs', 2, 1)
        FROM otel_traces)
    GROUP BY trace_id, span_id
),
up AS (
    SELECT trace_id, span_id, parent_span_id AS cur, 1 AS depth FROM t WHERE kind = 1 AND parent_span_id != ''
    UNION ALL
    SELECT up.trace_id, up.span_id, p.parent_span_id AS cur, up.depth + 1 AS depth
    FROM up ANY INNER JOIN t p ON p.trace_id = up.trace_id AND p.span_id = up.cur
    WHERE up.depth < 256 AND p.parent_span_id != ''
),
anc AS (
    SELECT up.trace_id AS trace_id, up.span_id AS span_id,
           argMinIf(g.span_id, up.depth, g.kind = 2) AS nearest_packet, countIf(g.kind = 2) AS packets,
           argMaxIf(g.span_id, up.depth, g.kind > 0) AS topmost, countIf(g.kind > 0) AS genai
    FROM up ANY LEFT JOIN t g ON g.trace_id = up.trace_id AND g.span_id = up.cur
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
FROM otel_inputs_span_owner w
JOIN otel_inputs_genai_spans g ON g.trace_id = w.trace_id AND g.span_id = w.span_id
JOIN otel_inputs_genai_spans o ON o.trace_id = w.trace_id AND o.span_id = w.owner_span_id
WHERE w.owner_span_id != w.span_id;

-- Input rows of packet attempts (exporter/_rows.py input_rows), malformed events kept visible.
CREATE VIEW IF NOT EXISTS agent_attempt_inputs AS
WITH ev AS (
    SELECT g.attempt_id AS attempt_id, g.trace_id AS trace_id, g.span_id AS span_id, g.started_at AS attempt_started_at,
           e.1 AS pos, e.2 AS captured_at, e.3 AS at,
           multiIf(NOT mapContains(at, 'otel_inputs.input.id'), 'input id missing',
                   at['otel_inputs.input.id'] = '', 'input id is not a non-empty string', '') AS id_problem,
           if(mapContains(at, 'otel_inputs.input.size_bytes') AND otel_inputs_int(at['otel_inputs.input.size_bytes'], 9223372036854775807) IS NULL,
              'size_bytes is not a non-negative integer', '') AS size_problem,
           otel_inputs_int(at['otel_inputs.input.seq'], 2147483647) AS seq_int
    FROM otel_inputs_genai_spans g
    ARRAY JOIN arrayFilter(x -> x.4 = 'otel_inputs.input',
        arrayMap((i, t, a, nm) -> (i, t, a, nm), arrayEnumerate(g.event_names), g.event_times, g.event_attrs, g.event_names)) AS e
    WHERE g.packet
),
dup AS (
    SELECT *, seq_int IS NOT NULL AND row_number() OVER (PARTITION BY trace_id, span_id, seq_int ORDER BY pos) > 1 AS is_dup
    FROM ev
),
k AS (
    SELECT *, seq_int IS NOT NULL AND NOT is_dup AS kept,
           multiIf(NOT mapContains(at, 'otel_inputs.input.seq'), 'seq missing', seq_int IS NULL, 'seq is not a non-negative integer',
                   is_dup, concat('duplicate seq ', toString(seq_int)), '') AS seq_problem,
           arrayStringConcat(arrayFilter(x -> x != '', [id_problem, size_problem, seq_problem]), '; ') AS problems
    FROM dup
),
n AS (
    SELECT *, coalesce(max(if(kept, seq_int, NULL)) OVER (PARTITION BY trace_id, span_id) + 1, 0) AS next_seq,
           row_number() OVER (PARTITION BY trace_id, span_id, kept ORDER BY pos) - 1 AS pending_at
    FROM k
)
SELECT nullIf(otel_inputs_attr(at, 'otel_inputs.input.id'), '') AS input_id, attempt_id,
       toInt32(if(kept, seq_int, next_seq + pending_at)) AS seq,
       otel_inputs_attr(at, 'otel_inputs.input.label') AS label,
       otel_inputs_attr(at, 'otel_inputs.input.source_kind') AS source_kind,
       otel_inputs_attr(at, 'otel_inputs.input.delivery_mode') AS delivery_mode,
       otel_inputs_attr(at, 'otel_inputs.input.source_path') AS source_path,
       otel_inputs_attr(at, 'otel_inputs.input.snapshot_ref') AS snapshot_ref,
       otel_inputs_attr(at, 'otel_inputs.input.media_type') AS media_type,
       otel_inputs_attr(at, 'otel_inputs.input.preview_kind') AS preview_kind,
       otel_inputs_int(at['otel_inputs.input.size_bytes'], 9223372036854775807) AS size_bytes,
       otel_inputs_attr(at, 'otel_inputs.input.sha256') AS sha256,
       if(problems != '', 'unreadable', otel_inputs_attr(at, 'otel_inputs.input.capture_status')) AS capture_status,
       if(problems != '', 'never_captured', otel_inputs_attr(at, 'otel_inputs.input.artifact_status')) AS artifact_status,
       otel_inputs_attr(at, 'otel_inputs.input.detail') AS detail,
       captured_at, if(problems != '', concat('malformed input event: ', problems), NULL) AS row_problem,
       attempt_started_at, trace_id, span_id
FROM n;

-- Every GenAI span that is an attempt, with coverage settled (exporter/_rows.py finish_coverage).
CREATE VIEW IF NOT EXISTS agent_attempts AS
WITH inputs AS (
    SELECT trace_id AS i_trace, span_id AS i_span, count() AS input_count, countIf(row_problem IS NOT NULL) AS malformed
    FROM agent_attempt_inputs GROUP BY trace_id, span_id
),
first_step AS (
    SELECT trace_id AS f_trace, attempt_id AS f_attempt,
           argMin(tuple(span_id, system_prompt, user_prompt, input_messages_json), seq) AS f
    FROM agent_attempt_steps
    WHERE step_kind = 'model_call' AND coalesce(operation_name, '') != 'embeddings'
    GROUP BY trace_id, attempt_id
),
a AS (
    SELECT g.*, coalesce(i.input_count, 0) AS input_count, coalesce(i.malformed, 0) AS malformed,
           otel_inputs_attr(g.A, 'otel_inputs.packet.coverage') AS cov_raw,
           otel_inputs_int(g.A['otel_inputs.packet.item_count'], 2147483647) AS items,
           if(cov_raw IN ('complete', 'partial', 'not_recorded'), cov_raw, 'partial') AS cov0,
           arrayFilter(x -> x != '', [
               if(cov_raw IN ('complete', 'partial', 'not_recorded'), '', 'packet coverage missing or not a known value'),
               if(items IS NOT NULL AND input_count < items,
                  concat('only ', toString(input_count), ' of ', toString(items), ' input events arrived (span event limit or dropped events)'), ''),
               if(malformed > 0, concat(toString(malformed), ' input events were malformed'), '')]) AS reasons0,
           if(length(reasons0) > 0 AND cov0 = 'complete', 'partial', cov0) AS cov,
           if(otel_inputs_attr(g.A, 'otel_inputs.packet.gap_reason') IS NOT NULL AND cov != 'complete',
              arrayPushFront(reasons0, assumeNotNull(otel_inputs_attr(g.A, 'otel_inputs.packet.gap_reason'))), reasons0) AS reasons,
           (g.system_prompt IS NOT NULL OR g.user_prompt IS NOT NULL OR g.input_messages_json IS NOT NULL) AS own
    FROM otel_inputs_genai_spans g
    -- A join, not IN (subquery): a filter on the trace then reaches the ownership table's sort key.
    INNER JOIN (SELECT trace_id AS w_trace, span_id AS w_span FROM otel_inputs_span_owner WHERE owner_span_id = span_id) w
        ON w.w_trace = g.trace_id AND w.w_span = g.span_id
    LEFT JOIN inputs i ON i.i_trace = g.trace_id AND i.i_span = g.span_id
)
SELECT a.attempt_id AS attempt_id,
       if(packet, otel_inputs_attr(A, 'otel_inputs.run.id'), NULL) AS run_id, session_id,
       if(packet, otel_inputs_attr(A, 'otel_inputs.phase'), NULL) AS phase, agent_name, provider_name, request_model,
       if(packet, otel_inputs_attr(A, 'otel_inputs.task.prompt'), NULL) AS task_prompt,
       if(packet, otel_inputs_attr(A, 'otel_inputs.task.source_kind'), NULL) AS task_source_kind,
       if(packet, otel_inputs_attr(A, 'otel_inputs.task.source_path'), NULL) AS task_source_path,
       if(packet, otel_inputs_int(A['otel_inputs.task.size_bytes'], 9223372036854775807), NULL) AS task_size_bytes,
       if(packet, otel_inputs_attr(A, 'otel_inputs.task.sha256'), NULL) AS task_sha256,
       if(packet, otel_inputs_attr(A, 'otel_inputs.send_kind'), NULL) AS send_kind,
       if(packet, otel_inputs_int(A['otel_inputs.turn_index'], 2147483647), NULL) AS turn_index,
       if(packet, otel_inputs_attr(A, 'otel_inputs.previous_turn_attempt_id'), NULL) AS previous_turn_attempt_id,
       if(packet, otel_inputs_attr(A, 'otel_inputs.retry_of_attempt_id'), NULL) AS retry_of_attempt_id,
       system_prompt, user_prompt,
       if(packet, otel_inputs_int(A['otel_inputs.packet.version'], 2147483647), NULL) AS input_packet_version,
       if(packet, cov, 'not_recorded') AS input_coverage,
       if(packet AND length(reasons) > 0, arrayStringConcat(reasons, '; '), NULL) AS coverage_reason,
       if(packet, otel_inputs_int(A['otel_inputs.packet.declared_count'], 2147483647), NULL) AS declared_input_count,
       if(packet, otel_inputs_int(A['otel_inputs.packet.captured_count'], 2147483647), NULL) AS captured_input_count,
       if(packet, otel_inputs_int(A['otel_inputs.packet.omitted_count'], 2147483647), NULL) AS omitted_input_count,
       if(packet, items, NULL) AS item_count,
       if(packet, otel_inputs_attr(A, 'otel_inputs.capture.decision'), NULL) AS capture_decision,
       if(packet, otel_inputs_attr(A, 'otel_inputs.capture.gap_reason'), NULL) AS capture_gap_reason,
       started_at, ended_at, status, status_message, trace_id, span_id, service_name, source_format,
       CAST(NULL, 'Nullable(Int32)') AS dropped_events_count, CAST(NULL, 'Nullable(Int32)') AS dropped_attributes_count,
       parent_span_id, span_name, operation_name, step_kind, response_model, input_tokens, output_tokens,
       tool_name, tool_call_id, tool_arguments, input_messages_json, messages_note,
       if(NOT own AND f.1 != '', f.2, NULL) AS step_system_prompt, if(NOT own AND f.1 != '', f.3, NULL) AS step_user_prompt,
       if(NOT own AND f.1 != '', f.4, NULL) AS step_input_messages_json, if(NOT own AND f.1 != '', f.1, NULL) AS step_messages_span_id,
       'dropped_events_count and dropped_attributes_count are not in the stock otel_traces schema (NULL here), so a coverage '
       || 'reason for dropped span events is not given; attribute types are not either (every value is text)' AS projection_gaps
FROM a
LEFT JOIN first_step fs ON fs.f_trace = a.trace_id AND fs.f_attempt = a.attempt_id;

-- One row per exchange-part event of an attempt (exporter/_rows.py part_rows); a step's parts go
-- with its attempt row in the DuckDB path, i.e. they are not shown, and neither are they here.
CREATE VIEW IF NOT EXISTS agent_exchange_parts AS
WITH e AS (
    SELECT g.attempt_id AS attempt_id, g.started_at AS attempt_started_at, ev.1 AS recorded_at, ev.2 AS at,
           g.trace_id AS trace_id
    FROM otel_inputs_genai_spans g
    INNER JOIN (SELECT trace_id AS w_trace, span_id AS w_span FROM otel_inputs_span_owner WHERE owner_span_id = span_id) w
        ON w.w_trace = g.trace_id AND w.w_span = g.span_id
    ARRAY JOIN arrayFilter(x -> x.3 = 'otel_inputs.exchange_part',
        arrayMap((t, a, nm) -> (t, a, nm), g.event_times, g.event_attrs, g.event_names)) AS ev
)
SELECT attempt_id,
       otel_inputs_attr(at, 'otel_inputs.part.name') AS part_name,
       otel_inputs_attr(at, 'otel_inputs.part.capture') AS capture,
       otel_inputs_attr(at, 'otel_inputs.part.reason') AS reason,
       otel_inputs_attr(at, 'otel_inputs.part.dispatch') AS dispatch,
       otel_inputs_attr(at, 'otel_inputs.part.ref') AS ref,
       otel_inputs_attr(at, 'otel_inputs.part.sha256') AS sha256,
       otel_inputs_int(at['otel_inputs.part.size_bytes'], 9223372036854775807) AS size_bytes,
       otel_inputs_attr(at, 'otel_inputs.part.persistence') AS persistence,
       otel_inputs_attr(at, 'otel_inputs.part.detail') AS detail,
       recorded_at, attempt_started_at,
       arrayFilter(x -> x != '', [
           if(mapContains(at, 'otel_inputs.part.size_bytes') AND size_bytes IS NULL, 'size_bytes is not a non-negative integer', ''),
           if(mapContains(at, 'otel_inputs.part.name'), '', 'part name missing')]) AS problems,
       if(length(problems) > 0, concat('malformed exchange part event: ', arrayStringConcat(problems, '; ')), NULL) AS row_problem,
       trace_id
FROM e;

-- C2: the attempt's exact messages, whichever of span and GenAI log event arrived first (DuckDB
-- migration 11's agent_attempt_messages, rule for rule).
CREATE VIEW IF NOT EXISTS agent_attempt_messages AS
WITH ev AS (
    SELECT a.attempt_id AS attempt_id, a.trace_id AS trace_id, l.SpanId = a.span_id AS on_attempt, l.Timestamp AS ts, l.Body AS body,
           l.LogAttributes AS attrs, if(l.EventName != '', l.EventName, l.LogAttributes['event.name']) AS event_name
    FROM agent_attempts a
    -- A record the Collector inserted twice (a retried export) counts once: identical records are one.
    JOIN (SELECT * FROM otel_logs LIMIT 1 BY TraceId, SpanId, Timestamp, EventName, Body, LogAttributes) l
      ON l.TraceId = a.trace_id
    WHERE l.Timestamp >= a.started_at AND l.Timestamp <= a.ended_at
      AND (l.SpanId = a.span_id OR l.SpanId = coalesce(a.step_messages_span_id, ''))
      AND event_name IN ('gen_ai.client.inference.operation.details', 'gen_ai.system.message', 'gen_ai.user.message',
                         'gen_ai.assistant.message', 'gen_ai.tool.message')
),
pieces AS (
    SELECT *, event_name = 'gen_ai.client.inference.operation.details' AS details,
           concat('{"role":', otel_inputs_json_str(multiIf(event_name = 'gen_ai.system.message', 'system',
                      event_name = 'gen_ai.user.message', 'user', event_name = 'gen_ai.assistant.message', 'assistant', 'tool')),
                  ',"content":', if(isValidJSON(body) AND JSONType(body) = 'Object',
                                    if(JSONHas(body, 'content'), JSONExtractRaw(body, 'content'), 'null'),
                                    otel_inputs_json_str(body)), '}') AS piece
    FROM ev
),
lj AS (
    SELECT trace_id, attempt_id, max(on_attempt) AS has_la, max(NOT on_attempt) AS has_ls,
        if(countIf(on_attempt AND details AND mapContains(attrs, 'gen_ai.input.messages')) > 0,
           argMaxIf(attrs['gen_ai.input.messages'], ts, on_attempt AND details AND mapContains(attrs, 'gen_ai.input.messages')),
           if(countIf(on_attempt AND NOT details) > 0,
              concat('[', arrayStringConcat(arrayMap(x -> x.2, arraySort(x -> x.1, groupArrayIf((ts, piece), on_attempt AND NOT details))), ','), ']'),
              NULL)) AS la_json,
        if(countIf(NOT on_attempt AND details AND mapContains(attrs, 'gen_ai.input.messages')) > 0,
           argMaxIf(attrs['gen_ai.input.messages'], ts, NOT on_attempt AND details AND mapContains(attrs, 'gen_ai.input.messages')),
           if(countIf(NOT on_attempt AND NOT details) > 0,
              concat('[', arrayStringConcat(arrayMap(x -> x.2, arraySort(x -> x.1, groupArrayIf((ts, piece), NOT on_attempt AND NOT details))), ','), ']'),
              NULL)) AS ls_json,
        if(countIf(on_attempt AND details AND mapContains(attrs, 'gen_ai.system_instructions')) > 0,
           argMaxIf(attrs['gen_ai.system_instructions'], ts, on_attempt AND details AND mapContains(attrs, 'gen_ai.system_instructions')), NULL) AS la_sys,
        if(countIf(NOT on_attempt AND details AND mapContains(attrs, 'gen_ai.system_instructions')) > 0,
           argMaxIf(attrs['gen_ai.system_instructions'], ts, NOT on_attempt AND details AND mapContains(attrs, 'gen_ai.system_instructions')), NULL) AS ls_sys
    FROM pieces
    GROUP BY trace_id, attempt_id
),
m AS (
    SELECT a.attempt_id AS attempt_id, a.trace_id AS trace_id,
           (a.system_prompt IS NOT NULL OR a.user_prompt IS NOT NULL OR a.input_messages_json IS NOT NULL) AS own,
           (a.step_system_prompt IS NOT NULL OR a.step_user_prompt IS NOT NULL OR a.step_input_messages_json IS NOT NULL) AS step_own,
           a.system_prompt AS system_prompt, a.user_prompt AS user_prompt, a.input_messages_json AS input_messages_json,
           a.messages_note AS messages_note, a.step_system_prompt AS step_system_prompt, a.step_user_prompt AS step_user_prompt,
           a.step_input_messages_json AS step_input_messages_json, a.step_messages_span_id AS step_messages_span_id,
           coalesce(l.has_la, 0) = 1 AS has_la, coalesce(l.has_ls, 0) = 1 AS has_ls,
           if(l.has_la = 1, l.la_json, l.ls_json) AS log_json, if(l.has_la = 1, l.la_sys, l.ls_sys) AS log_sys_json
    FROM agent_attempts a
    LEFT JOIN lj l ON l.trace_id = a.trace_id AND l.attempt_id = a.attempt_id
),
t AS (
    SELECT *, otel_inputs_role_text(log_json, 'user') AS log_user,
           coalesce(if(log_sys_json IS NOT NULL AND isValidJSON(assumeNotNull(log_sys_json)), otel_inputs_log_parts_text(log_sys_json), NULL),
                    otel_inputs_role_text(log_json, 'system')) AS log_system
    FROM m
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
FROM t
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
