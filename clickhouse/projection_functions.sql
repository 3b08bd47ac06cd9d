-- SQL functions the projection views use (ClickHouse SQL UDFs are server-global, hence the
-- otel_inputs_ prefix).  Each one mirrors a named Python or DuckDB rule; see docs/clickhouse.md.
-- Apply before projection.sql:  clickhouse-client --multiquery < clickhouse/projection_functions.sql

-- c ? a : b with both computed for every row (an array literal, not if()): for a branch over wide
-- columns, if()'s short-circuit copies those columns for the rows it keeps, which costs more than
-- computing the branch everywhere (3-4x for the coverage columns at insert).
CREATE FUNCTION IF NOT EXISTS otel_inputs_pick AS (c, a, b) -> [b, a][1 + toUInt8(c)];

-- A present map entry, else NULL (the exporter stores a missing attribute as a missing key).
CREATE FUNCTION IF NOT EXISTS otel_inputs_attr AS (m, k) -> if(mapContains(m, k), m[k], NULL);

-- exporter/_rows.py _int: a non-negative integer up to hi, else NULL.
CREATE FUNCTION IF NOT EXISTS otel_inputs_int AS (v, hi) ->
    if(toInt64OrNull(v) IS NOT NULL AND toInt64OrNull(v) >= 0 AND toInt64OrNull(v) <= hi, toInt64OrNull(v), NULL);

-- A JSON string literal as Python's json.dumps(ensure_ascii=False) writes it (the common escapes).
CREATE FUNCTION IF NOT EXISTS otel_inputs_json_str AS (s) ->
    concat('"', replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(s,
        '\\', '\\\\'), '"', '\\"'), '\n', '\\n'), '\r', '\\r'), '\t', '\\t'), '\b', '\\b'), '\f', '\\f'), '"');

-- exporter/_rows.py _part_texts on raw JSON: (1, texts) or (0, []) when the shape is not recognised.
CREATE FUNCTION IF NOT EXISTS otel_inputs_part_texts AS (parts) ->
    if(JSONType(parts) = 'String', (toUInt8(1), [JSONExtractString(parts)]),
       if(JSONType(parts) != 'Array'
              OR arrayExists(p -> JSONType(p) NOT IN ('String', 'Object'), JSONExtractArrayRaw(parts)),
          (toUInt8(0), CAST([], 'Array(String)')),
          (toUInt8(1), arrayMap(p -> if(JSONType(p) = 'String', JSONExtractString(p),
                                        JSONExtractString(p, if(JSONHas(p, 'content'), 'content', 'text'))),
              arrayFilter(p -> JSONType(p) = 'String'
                      OR ((NOT JSONHas(p, 'type') OR JSONExtractString(p, 'type') = 'text')
                          AND JSONType(p, if(JSONHas(p, 'content'), 'content', 'text')) = 'String'),
                  JSONExtractArrayRaw(parts))))));

-- The texts of one message item for role `role` ('' = any role), exporter/_rows.py _messages_text.
CREATE FUNCTION IF NOT EXISTS otel_inputs_item_texts AS (item, role) ->
    if(JSONType(item) = 'Object' AND JSONHas(item, 'role'),
       if(role != '' AND (JSONType(item, 'role') != 'String' OR JSONExtractString(item, 'role') != role),
          (toUInt8(1), CAST([], 'Array(String)')),
          otel_inputs_part_texts(if(JSONHas(item, 'parts'), JSONExtractRaw(item, 'parts'),
                                    if(JSONHas(item, 'content'), JSONExtractRaw(item, 'content'), 'null')))),
       if(role IN ('', 'system'), otel_inputs_part_texts(concat('[', item, ']')),
          (toUInt8(1), CAST([], 'Array(String)'))));

CREATE FUNCTION IF NOT EXISTS otel_inputs_texts_or_raw AS (raw, got) ->
    if(arrayExists(g -> g.1 = 0, got), raw,
       if(length(arrayFlatten(arrayMap(g -> g.2, got))) > 0,
          arrayStringConcat(arrayFlatten(arrayMap(g -> g.2, got)), '\n\n'),
          if(length(got) > 0, NULL, raw)));

-- exporter/_rows.py _messages_text(raw, role): text of the messages with role, the raw text if unparseable.
CREATE FUNCTION IF NOT EXISTS otel_inputs_messages_text AS (raw, role) ->
    if(raw IS NULL, NULL,
       if(NOT isValidJSON(assumeNotNull(raw)) OR JSONType(assumeNotNull(raw)) NOT IN ('Array', 'Object'), raw,
          otel_inputs_texts_or_raw(raw, arrayMap(item -> otel_inputs_item_texts(item, role),
              if(JSONType(assumeNotNull(raw)) = 'Object', [assumeNotNull(raw)], JSONExtractArrayRaw(assumeNotNull(raw)))))));

-- exporter/_rows.py _has_role
CREATE FUNCTION IF NOT EXISTS otel_inputs_has_role AS (raw, role) ->
    raw IS NOT NULL AND isValidJSON(assumeNotNull(raw)) AND JSONType(assumeNotNull(raw)) = 'Array'
    AND arrayExists(m -> JSONType(m) = 'Object' AND JSONType(m, 'role') = 'String' AND JSONExtractString(m, 'role') = role,
                    JSONExtractArrayRaw(assumeNotNull(raw)));

-- exporter/_rows.py _genai_json: flattened (role, content) messages as GenAI input-message JSON.
CREATE FUNCTION IF NOT EXISTS otel_inputs_flat_json AS (msgs) ->
    concat('[', arrayStringConcat(arrayMap(t -> concat('{"role":', otel_inputs_json_str(t.1),
        ',"parts":[{"type":"text","content":', otel_inputs_json_str(t.2), '}]}'), msgs), ','), ']');

CREATE FUNCTION IF NOT EXISTS otel_inputs_flat_role AS (msgs, role) ->
    if(arrayExists(t -> t.1 = role, msgs),
       arrayStringConcat(arrayMap(t -> t.2, arrayFilter(t -> t.1 = role, msgs)), '\n\n'), NULL);

-- (role, content) of flattened <prefix>.<i>.<role|content> attributes in index order (_indexed_messages).
CREATE FUNCTION IF NOT EXISTS otel_inputs_flat AS (m, prefix, role_key, content_key) ->
    arrayMap(i -> (m[concat(prefix, '.', toString(i), '.', role_key)], m[concat(prefix, '.', toString(i), '.', content_key)]),
        arrayFilter(i -> mapContains(m, concat(prefix, '.', toString(i), '.', role_key))
                         AND mapContains(m, concat(prefix, '.', toString(i), '.', content_key)),
            arraySort(arrayDistinct(arrayMap(k -> toUInt64(extract(k, '^[^0-9]*\\.([0-9]+)\\.')),
                arrayFilter(k -> startsWith(k, concat(prefix, '.'))
                                 AND match(substring(k, length(prefix) + 2), concat('^[0-9]+\\.(', replaceAll(role_key, '.', '\\.'), '|', replaceAll(content_key, '.', '\\.'), ')$')),
                            mapKeys(m)))))));

-- DuckDB migration 11 macro otel_inputs_parts_text (the messages view's reading of log records).
CREATE FUNCTION IF NOT EXISTS otel_inputs_log_value AS (p, k) ->
    if(JSONType(p, k) = 'String', JSONExtractString(p, k), JSONExtractRaw(p, k));
CREATE FUNCTION IF NOT EXISTS otel_inputs_log_parts_text AS (parts) ->
    if(parts IS NULL OR NOT isValidJSON(assumeNotNull(parts)), NULL,
       if(JSONType(assumeNotNull(parts)) = 'String', JSONExtractString(assumeNotNull(parts)),
          if(JSONType(assumeNotNull(parts)) != 'Array', NULL,
             nullIf(arrayStringConcat(arrayMap(p -> assumeNotNull(p), arrayFilter(p -> p IS NOT NULL, arrayMap(p ->
                 if(JSONType(p) = 'String', JSONExtractString(p),
                    if(if(JSONType(p, 'type') IN ('Null', ''), 'text', otel_inputs_log_value(p, 'type')) = 'text',
                       if(JSONType(p, 'content') NOT IN ('Null', ''), otel_inputs_log_value(p, 'content'),
                          if(JSONType(p, 'text') NOT IN ('Null', ''), otel_inputs_log_value(p, 'text'), NULL)),
                       NULL)),
                 JSONExtractArrayRaw(assumeNotNull(parts))))), '\n\n'), ''))));

-- DuckDB migration 11 macro otel_inputs_role_text(doc, want).
CREATE FUNCTION IF NOT EXISTS otel_inputs_role_text AS (doc, want) ->
    if(doc IS NULL, NULL,
       if(NOT isValidJSON(assumeNotNull(doc)), if(want = 'user', doc, NULL),
          if(JSONType(assumeNotNull(doc)) NOT IN ('Array', 'Object'), NULL,
             nullIf(arrayStringConcat(arrayMap(p -> assumeNotNull(p), arrayFilter(p -> p IS NOT NULL, arrayMap(m ->
                 otel_inputs_log_parts_text(if(JSONType(m, 'parts') NOT IN ('Null', ''), JSONExtractRaw(m, 'parts'),
                                               if(JSONType(m, 'content') NOT IN ('Null', ''), JSONExtractRaw(m, 'content'), NULL))),
                 arrayFilter(m -> otel_inputs_log_value(m, 'role') = want,
                     if(JSONType(assumeNotNull(doc)) = 'Array', JSONExtractArrayRaw(assumeNotNull(doc)), [assumeNotNull(doc)]))))),
                 '\n\n'), ''))));

-- ================================================================================================
-- The encodings (exporter/_encodings, docs/encodings.md): one section per module, functions named
-- otel_inputs_<encoding>_<field>.  Each reads what that encoding recorded on one span (A: its
-- attribute map; N, E: its event names and event attribute maps) and is NULL where it recorded
-- nothing, '' counting as nothing.  The GenAI-span view merges them field by field in the
-- registry's order (wire, gen_ai, openllmetry, pydantic_ai, openinference).  Messages are a tuple
-- (system text, user text, messages JSON, note); an encoding without messages gives all NULLs.
-- ================================================================================================

CREATE FUNCTION IF NOT EXISTS otel_inputs_str AS (m, k) -> nullIf(otel_inputs_attr(m, k), '');
CREATE FUNCTION IF NOT EXISTS otel_inputs_count AS (m, k) -> if(mapContains(m, k), otel_inputs_int(m[k], 9223372036854775807), NULL);
CREATE FUNCTION IF NOT EXISTS otel_inputs_no_messages AS () ->
    tuple(CAST(NULL, 'Nullable(String)'), CAST(NULL, 'Nullable(String)'), CAST(NULL, 'Nullable(String)'), CAST(NULL, 'Nullable(String)'));
-- exporter/_encodings/_base.py messages_of(system_raw, input_raw, note)
CREATE FUNCTION IF NOT EXISTS otel_inputs_messages_of AS (sys_raw, in_raw, note) ->
    tuple(coalesce(otel_inputs_messages_text(sys_raw, ''),
                   if(otel_inputs_has_role(in_raw, 'system'), otel_inputs_messages_text(in_raw, 'system'), NULL)),
          otel_inputs_messages_text(in_raw, 'user'), in_raw, CAST(note, 'Nullable(String)'));
-- The same with no system instructions (a literal NULL there trips the analyzer inside a view).
CREATE FUNCTION IF NOT EXISTS otel_inputs_messages_of_input AS (in_raw, note) ->
    tuple(if(otel_inputs_has_role(in_raw, 'system'), otel_inputs_messages_text(in_raw, 'system'), NULL),
          otel_inputs_messages_text(in_raw, 'user'), CAST(in_raw, 'Nullable(String)'), CAST(note, 'Nullable(String)'));
-- exporter/_encodings/_base.py flat_messages
CREATE FUNCTION IF NOT EXISTS otel_inputs_flat_messages AS (flat) ->
    if(length(flat) > 0,
       tuple(otel_inputs_flat_role(flat, 'system'), otel_inputs_flat_role(flat, 'user'), CAST(otel_inputs_flat_json(flat), 'Nullable(String)'),
             CAST(NULL, 'Nullable(String)')),
       otel_inputs_no_messages());
CREATE FUNCTION IF NOT EXISTS otel_inputs_messages_empty AS (m) ->
    tupleElement(m, 1) IS NULL AND tupleElement(m, 2) IS NULL AND tupleElement(m, 3) IS NULL;

-- --- wire (exporter/_encodings/wire.py) ---------------------------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_wire_recognises AS (A) -> mapContains(A, 'otel_inputs.packet.version');
CREATE FUNCTION IF NOT EXISTS otel_inputs_wire_provider AS (A) ->
    if(otel_inputs_wire_recognises(A), otel_inputs_str(A, 'otel_inputs.provider.name'), NULL);

-- --- gen_ai (exporter/_encodings/genai.py) ------------------------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_recognises AS (A) -> mapContains(A, 'gen_ai.operation.name');
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_provider AS (A) ->
    coalesce(otel_inputs_str(A, 'gen_ai.provider.name'), otel_inputs_str(A, 'gen_ai.system'));
-- A GenAI content field from the span's attributes, else from its first operation-details event carrying it.
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_field AS (A, N, E, k) ->
    if(mapContains(A, k), A[k],
       if(arrayExists((nm, at) -> nm = 'gen_ai.client.inference.operation.details' AND mapContains(at, k), N, E),
          arrayFirst((at, nm) -> nm = 'gen_ai.client.inference.operation.details' AND mapContains(at, k), E, N)[k], NULL));
-- One per-message span event as {"role":…,"content":…} (exporter/_encodings/_base.py json_piece).
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_piece AS (nm, at) ->
    concat('{"role":', otel_inputs_json_str(multiIf(nm = 'gen_ai.system.message', 'system', nm = 'gen_ai.user.message', 'user',
                                                    nm = 'gen_ai.assistant.message', 'assistant', 'tool')),
           ',"content":', if(NOT mapContains(at, 'content'), 'null',
                             if(isValidJSON(at['content']), at['content'], otel_inputs_json_str(at['content']))), '}');
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_pieces AS (N, E) ->
    arrayMap((nm, at) -> otel_inputs_genai_piece(nm, at),
             arrayFilter(nm -> nm IN ('gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message'), N),
             arrayFilter((at, nm) -> nm IN ('gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message'), E, N));
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_prompt_event AS (N, E) ->
    arrayFirstIndex((nm, at) -> nm = 'gen_ai.content.prompt' AND mapContains(at, 'gen_ai.prompt'), N, E);
-- exporter/_encodings/genai.py span_messages: attributes and operation-details events field by
-- field, else the gen_ai.content.prompt event, else the per-message events, else gen_ai.prompt.
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_messages AS (A, N, E) ->
    otel_inputs_genai_messages_from(A, N, E, otel_inputs_genai_field(A, N, E, 'gen_ai.system_instructions'),
                                    otel_inputs_genai_field(A, N, E, 'gen_ai.input.messages'),
                                    otel_inputs_genai_prompt_event(N, E), otel_inputs_genai_pieces(N, E));
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_messages_from AS (A, N, E, sys_raw, in_raw, pe, pieces) ->
    multiIf(sys_raw IS NOT NULL OR in_raw IS NOT NULL, otel_inputs_messages_of(sys_raw, in_raw, NULL),
            pe > 0, tuple(CAST(NULL, 'Nullable(String)'), otel_inputs_messages_text(E[pe]['gen_ai.prompt'], 'user'),
                          CAST(E[pe]['gen_ai.prompt'], 'Nullable(String)'), CAST(NULL, 'Nullable(String)')),
            length(pieces) > 0, otel_inputs_messages_of_input(concat('[', arrayStringConcat(pieces, ','), ']'), NULL),
            mapContains(A, 'gen_ai.prompt'), tuple(CAST(NULL, 'Nullable(String)'), otel_inputs_messages_text(A['gen_ai.prompt'], 'user'),
                                                   CAST(A['gen_ai.prompt'], 'Nullable(String)'), CAST(NULL, 'Nullable(String)')),
            otel_inputs_no_messages());

-- genai.py tool_arguments: gen_ai.tool.call.arguments, else (an execute_tool span) its gen_ai.tool.message
-- event's content, else the arguments of the first tool_call part of its input messages.
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_tool_arguments AS (A, N, E) ->
    multiIf(mapContains(A, 'gen_ai.tool.call.arguments'), otel_inputs_str(A, 'gen_ai.tool.call.arguments'),
            A['gen_ai.operation.name'] != 'execute_tool', NULL,
            arrayExists((at, nm) -> nm = 'gen_ai.tool.message' AND mapContains(at, 'content'), E, N),
            nullIf(arrayFirst((at, nm) -> nm = 'gen_ai.tool.message' AND mapContains(at, 'content'), E, N)['content'], ''),
            otel_inputs_genai_call_part_arguments(otel_inputs_genai_field(A, N, E, 'gen_ai.input.messages')));
CREATE FUNCTION IF NOT EXISTS otel_inputs_genai_call_part_arguments AS (in_raw) ->
    if(in_raw IS NULL OR NOT isValidJSON(assumeNotNull(in_raw)) OR JSONType(assumeNotNull(in_raw)) != 'Array', NULL,
       nullIf(JSONExtractRaw(arrayFirst(part -> JSONType(part) = 'Object' AND JSONType(part, 'type') = 'String'
                                                AND JSONExtractString(part, 'type') = 'tool_call' AND JSONHas(part, 'arguments'),
                                        arrayFlatten(arrayMap(msg -> if(JSONType(msg) = 'Object' AND JSONType(msg, 'parts') = 'Array',
                                                                        JSONExtractArrayRaw(msg, 'parts'), CAST([], 'Array(String)')),
                                                              JSONExtractArrayRaw(assumeNotNull(in_raw))))), 'arguments'), ''));

-- --- openllmetry (exporter/_encodings/openllmetry.py) -------------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_openllmetry_recognises AS (A) ->
    mapContains(A, 'llm.request.type') OR (mapContains(A, 'gen_ai.system') AND (
        mapContains(A, 'gen_ai.prompt.0.role') OR mapContains(A, 'gen_ai.prompt.0.content')
        OR mapContains(A, 'gen_ai.completion.0.role') OR mapContains(A, 'gen_ai.completion.0.content')));
CREATE FUNCTION IF NOT EXISTS otel_inputs_openllmetry_operation AS (A) ->
    multiIf(A['llm.request.type'] = 'completion', 'text_completion', A['llm.request.type'] = 'embedding', 'embeddings', 'chat');
CREATE FUNCTION IF NOT EXISTS otel_inputs_openllmetry_messages AS (A) ->
    otel_inputs_flat_messages(otel_inputs_flat(A, 'gen_ai.prompt', 'role', 'content'));

-- --- pydantic_ai (exporter/_encodings/pydantic_ai.py) -------------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_pydantic_ai_messages AS (A) ->
    if(mapContains(A, 'pydantic_ai.all_messages'),
       otel_inputs_messages_of_input(A['pydantic_ai.all_messages'],
                               'from pydantic_ai.all_messages: the whole agent run, its replies and tool results included'),
       otel_inputs_no_messages());

-- --- openinference (exporter/_encodings/openinference.py) ---------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_openinference_recognises AS (A) ->
    A['openinference.span.kind'] IN ('LLM', 'AGENT', 'TOOL', 'EMBEDDING', 'RETRIEVER', 'RERANKER', 'CHAIN');
-- A CHAIN span contains a run: the attempt at the root, never listed as a step (operation 'container').
CREATE FUNCTION IF NOT EXISTS otel_inputs_openinference_operation AS (A) ->
    multiIf(A['openinference.span.kind'] = 'LLM', 'chat', A['openinference.span.kind'] = 'EMBEDDING', 'embeddings',
            A['openinference.span.kind'] = 'AGENT', 'invoke_agent', A['openinference.span.kind'] = 'TOOL', 'execute_tool',
            A['openinference.span.kind'] = 'CHAIN', 'container', '');
CREATE FUNCTION IF NOT EXISTS otel_inputs_openinference_provider AS (A) ->
    coalesce(otel_inputs_str(A, 'llm.provider'), otel_inputs_str(A, 'llm.system'));
-- A TOOL span's input is its arguments, never a user message; an LLM or AGENT span's input without
-- flattened messages is read as one text, and says so.
CREATE FUNCTION IF NOT EXISTS otel_inputs_openinference_messages AS (A) ->
    if(A['openinference.span.kind'] != 'CHAIN' AND length(otel_inputs_flat(A, 'llm.input_messages', 'message.role', 'message.content')) > 0,
       otel_inputs_flat_messages(otel_inputs_flat(A, 'llm.input_messages', 'message.role', 'message.content')),
       if(mapContains(A, 'input.value') AND A['openinference.span.kind'] IN ('LLM', 'AGENT'),
          tuple(CAST(NULL, 'Nullable(String)'), CAST(A['input.value'], 'Nullable(String)'), CAST(NULL, 'Nullable(String)'),
                CAST('from OpenInference input.value (the span''s input as one text)', 'Nullable(String)')),
          otel_inputs_no_messages()));
CREATE FUNCTION IF NOT EXISTS otel_inputs_openinference_tool_arguments AS (A) ->
    if(A['openinference.span.kind'] = 'TOOL', otel_inputs_str(A, 'input.value'), NULL);

-- --- vercel_ai (exporter/_encodings/vercel_ai.py) -----------------------------------------------
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_recognises AS (A) -> startsWith(A['ai.operationId'], 'ai.');
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_operation AS (A) ->
    multiIf(endsWith(A['ai.operationId'], '.doGenerate') OR endsWith(A['ai.operationId'], '.doStream'), 'chat',
            endsWith(A['ai.operationId'], '.doEmbed'), 'embeddings', A['ai.operationId'] = 'ai.toolCall', 'execute_tool',
            A['ai.operationId'] IN ('ai.generateText', 'ai.streamText', 'ai.generateObject', 'ai.streamObject'), 'invoke_agent', 'other');
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_str AS (A, k) -> if(otel_inputs_vercel_ai_recognises(A), otel_inputs_str(A, k), NULL);
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_input_tokens AS (A) ->
    if(NOT otel_inputs_vercel_ai_recognises(A), NULL,
       if(mapContains(A, 'ai.usage.inputTokens'), otel_inputs_count(A, 'ai.usage.inputTokens'), otel_inputs_count(A, 'ai.usage.promptTokens')));
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_output_tokens AS (A) ->
    if(NOT otel_inputs_vercel_ai_recognises(A), NULL,
       if(mapContains(A, 'ai.usage.outputTokens'), otel_inputs_count(A, 'ai.usage.outputTokens'), otel_inputs_count(A, 'ai.usage.completionTokens')));
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_tool_arguments AS (A) ->
    if(NOT otel_inputs_vercel_ai_recognises(A), NULL,
       if(mapContains(A, 'ai.toolCall.args'), otel_inputs_str(A, 'ai.toolCall.args'), otel_inputs_str(A, 'ai.toolCall.input')));
-- vercel_ai.py call_messages: a call's ai.prompt {"system": …, "prompt": … | "messages": […]}, kept as sent.
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_call_messages AS (prompt_raw) ->
    if(NOT isValidJSON(prompt_raw), tuple(CAST(NULL, 'Nullable(String)'), CAST(prompt_raw, 'Nullable(String)'), CAST(prompt_raw, 'Nullable(String)'), CAST(NULL, 'Nullable(String)')),
       if(JSONType(prompt_raw) != 'Object',
          tuple(CAST(NULL, 'Nullable(String)'), otel_inputs_messages_text(prompt_raw, 'user'), CAST(prompt_raw, 'Nullable(String)'), CAST(NULL, 'Nullable(String)')),
          tuple(if(JSONType(prompt_raw, 'system') = 'String', JSONExtractString(prompt_raw, 'system'), NULL),
                multiIf(JSONType(prompt_raw, 'prompt') = 'String', JSONExtractString(prompt_raw, 'prompt'),
                        JSONType(prompt_raw, 'messages') = 'Array', otel_inputs_messages_text(JSONExtractRaw(prompt_raw, 'messages'), 'user'),
                        JSONType(prompt_raw, 'prompt') = 'Array', otel_inputs_messages_text(JSONExtractRaw(prompt_raw, 'prompt'), 'user'), NULL),
                CAST(prompt_raw, 'Nullable(String)'), CAST(NULL, 'Nullable(String)'))));
CREATE FUNCTION IF NOT EXISTS otel_inputs_vercel_ai_messages AS (A) ->
    multiIf(NOT otel_inputs_vercel_ai_recognises(A), otel_inputs_no_messages(),
            mapContains(A, 'ai.prompt.messages'), otel_inputs_messages_of_input(A['ai.prompt.messages'], NULL),
            mapContains(A, 'ai.prompt'), otel_inputs_vercel_ai_call_messages(A['ai.prompt']),
            otel_inputs_no_messages());

-- exporter/_encodings/__init__.py source_format: the first encoding that recognises the span by its
-- attributes (A) or name (NAME) (NULL: an ordinary span).  One definition for every view.
-- A span a coding agent's turn encoding claims is read with its turn, never per span (exporter/_encodings
-- TURN_ENCODINGS): Gemini CLI's spans, gen_ai.agent.name = gemini-cli (docs/coding-agents.md).
CREATE FUNCTION IF NOT EXISTS otel_inputs_coding_claims AS (A) -> A['gen_ai.agent.name'] = 'gemini-cli';

CREATE FUNCTION IF NOT EXISTS otel_inputs_source_format AS (A, NAME) ->
    multiIf(otel_inputs_coding_claims(A), NULL,
            otel_inputs_wire_recognises(A), 'otel_inputs',
            otel_inputs_genai_recognises(A), 'gen_ai',
            otel_inputs_openllmetry_recognises(A), 'openllmetry',
            otel_inputs_openinference_recognises(A), 'openinference',
            otel_inputs_vercel_ai_recognises(A), 'vercel_ai',
            NULL);

-- exporter/_rows.py input_rows on one span's events: per input event (pos, captured_at, attributes,
-- seq, problems), seq settled as the DuckDB path settles it (a kept seq stays; a missing, unreadable
-- or repeated one is numbered after the highest kept seq, in event order).  Arrays, not windows: a
-- span inserted twice in one block still settles each copy alone.  Both the GenAI-span and the
-- input materialized views use it, so the malformed count and the rows come from one rule.
CREATE FUNCTION IF NOT EXISTS otel_inputs_input_events AS (names, times, attrs) ->
    otel_inputs_input_events_of(arrayFilter(x -> x.4 = 'otel_inputs.input',
        arrayMap((i, t, a, nm) -> (i, t, a, nm), arrayEnumerate(names), times, attrs, names)));
CREATE FUNCTION IF NOT EXISTS otel_inputs_input_events_of AS (E) ->
    otel_inputs_input_events_seq(E, arrayMap(e -> otel_inputs_int(e.3['otel_inputs.input.seq'], 2147483647), E));
CREATE FUNCTION IF NOT EXISTS otel_inputs_input_events_seq AS (E, seqs) ->
    otel_inputs_input_events_dup(E, seqs,
        arrayMap((s, j) -> s IS NOT NULL AND has(arraySlice(seqs, 1, j - 1), s), seqs, arrayEnumerate(seqs)));
CREATE FUNCTION IF NOT EXISTS otel_inputs_input_events_dup AS (E, seqs, dup) ->
    otel_inputs_input_events_rows(E, seqs, dup, arrayMap((s, d) -> s IS NOT NULL AND NOT d, seqs, dup));
CREATE FUNCTION IF NOT EXISTS otel_inputs_input_events_rows AS (E, seqs, dup, kept) ->
    arrayMap((e, s, d, k, pend) -> (e.1, e.2, e.3,
            toInt32(if(k, assumeNotNull(s),
                       if(arrayExists(x -> x, kept), arrayMax(arrayFilter((v, x) -> x, arrayMap(v -> assumeNotNull(v), seqs), kept)) + 1, 0)
                       + pend - 1)),
            arrayStringConcat(arrayFilter(x -> x != '', [
                multiIf(NOT mapContains(e.3, 'otel_inputs.input.id'), 'input id missing',
                        e.3['otel_inputs.input.id'] = '', 'input id is not a non-empty string', ''),
                if(mapContains(e.3, 'otel_inputs.input.size_bytes')
                       AND otel_inputs_int(e.3['otel_inputs.input.size_bytes'], 9223372036854775807) IS NULL,
                   'size_bytes is not a non-negative integer', ''),
                multiIf(NOT mapContains(e.3, 'otel_inputs.input.seq'), 'seq missing', s IS NULL, 'seq is not a non-negative integer',
                        d, concat('duplicate seq ', toString(s)), '')]), '; ')),
        E, seqs, dup, kept, arrayCumSum(arrayMap(k -> toInt64(NOT k), kept)));

-- ===== Coding agents (exporter/_encodings/_instructions.py; docs/coding-agents.md) =====================
-- A request as recorded (possibly cut, so not parsed) with its JSON string escapes undone: `\\` held
-- aside first, then the one-character escapes, `\uXXXX` kept as is (_instructions.unescape).
CREATE FUNCTION IF NOT EXISTS otel_inputs_coding_unescape AS (t) ->
    replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(replaceAll(t,
        '\\\\', '\0'), '\\n', '\n'), '\\t', '\t'), '\\r', '\r'), '\\"', '"'), '\\/', '/'), '\\b', '\b'), '\\f', '\f'),
        '\0', '\\');

-- Where a file's content begins in the unescaped request (1-based; 0: the runtime's marker is not there):
-- Claude Code writes "Contents of PATH (...):\n\n", Gemini CLI "--- Context from: PATH ---\n".
CREATE FUNCTION IF NOT EXISTS otel_inputs_coding_content_start AS (runtime, text, path) ->
    multiIf(runtime = 'claude-code',
                if(position(text, concat('Contents of ', path, ' (')) = 0, 0,
                   if(position(text, '):\n\n', position(text, concat('Contents of ', path, ' ('))) = 0, 0,
                      position(text, '):\n\n', position(text, concat('Contents of ', path, ' ('))) + 4)),
            runtime = 'gemini-cli',
                if(position(text, concat('--- Context from: ', path, ' ---\n')) = 0, 0,
                   position(text, concat('--- Context from: ', path, ' ---\n')) + length(concat('--- Context from: ', path, ' ---\n'))),
            0);

-- (delivered, detail) of one instruction file against the turn's recorded request (_instructions.delivered).
CREATE FUNCTION IF NOT EXISTS otel_inputs_coding_delivered AS (runtime, label, raw, whole, total, note, path, size, sha) ->
    if(raw IS NULL,
       ('request_not_recorded', if(note IS NOT NULL AND note != '', note, concat('the request was not recorded by ', label))),
       otel_inputs_coding_delivered_in(otel_inputs_coding_unescape(assumeNotNull(raw)),
           otel_inputs_coding_content_start(runtime, otel_inputs_coding_unescape(assumeNotNull(raw)), path),
           whole, if(whole, '', concat(' (the record is cut at ', toString(length(assumeNotNull(raw))),
                                       if(coalesce(total, 0) > 0, concat(' of ', toString(total)), ''), ' bytes)')),
           size, sha, label));

CREATE FUNCTION IF NOT EXISTS otel_inputs_coding_delivered_in AS (text, start, whole, cut, size, sha, label) ->
    multiIf(start = 0 AND whole, ('absent', 'the recorded request (whole) does not hold this file'),
            start = 0, ('not_in_recorded_part', concat('not in the part of the request that was recorded', cut)),
            sha IS NULL OR size IS NULL,
                ('in_request', 'in the request; its bytes at dispatch were not recorded, so not compared'),
            length(substring(text, start, assumeNotNull(size))) = size
                AND lower(hex(SHA256(substring(text, start, assumeNotNull(size))))) = sha,
                ('whole', concat('all ', toString(size), ' bytes, as at dispatch')),
            length(substring(text, start, assumeNotNull(size))) < size AND NOT whole,
                ('partial', concat(toString(length(substring(text, start, assumeNotNull(size)))), ' of ', toString(size),
                                   ' bytes before the recorded request ends', cut)),
            ('differs', concat('the request holds other bytes where this file goes: the file changed after the hook ',
                               'saw it, or ', label, ' shortened or rewrote it (', toString(size), ' bytes at dispatch)')));
