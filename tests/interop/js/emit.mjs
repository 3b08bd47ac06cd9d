// Emits WIRE attempts (docs/wire.md) with the official OpenTelemetry JS SDK and ONE of its stock
// OTLP trace exporters, as a Node.js agent runtime would: an attempt span per dispatch with the
// otel_inputs.* attributes, otel_inputs.input events, a chat step under it, and a second turn
// (a gate retry) linked to the first.  It declares more input items than it sends
// (otel_inputs.packet.item_count > events), so a truthful reader marks coverage partial.
//
// usage: node emit.mjs <proto|json|grpc> <endpoint> <run-id>
// prints one JSON line: {"exporter": ..., "attempts": [{"attempt_id", "trace_id", "span_id"}, ...]}

import { context, diag, DiagConsoleLogger, DiagLogLevel, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as GrpcExporter } from "@opentelemetry/exporter-trace-otlp-grpc";

const [kind, endpoint, runId] = process.argv.slice(2);
if (!kind || !endpoint || !runId) {
  console.error("usage: node emit.mjs <proto|json|grpc> <endpoint> <run-id>");
  process.exit(2);
}

// Export failures are only logged by the SDK; surface them on stderr so the test can show them.
diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.WARN);

function makeExporter() {
  // The HTTP exporters take the full signal URL; the gRPC exporter takes host:port.
  if (kind === "proto") return new ProtoExporter({ url: `${endpoint}/v1/traces` });
  if (kind === "json") return new JsonExporter({ url: `${endpoint}/v1/traces` });
  if (kind === "grpc") return new GrpcExporter({ url: endpoint.includes("://") ? endpoint : `http://${endpoint}` });
  throw new Error(`unknown exporter kind ${kind}`);
}

// Hostile owner-facing label: Markdown and HTML that a viewer must render as plain text only.
export const HOSTILE_LABEL = '<img src=x onerror=alert(1)> **notes**.md\n# not a heading [x](javascript:alert(1))';
const SYSTEM = "You are the build agent. Follow the repository's style.";
const TASK = `Implement the parser for ${runId}; keep the public API.`;

const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": `interop-js-${kind}` }),
  spanProcessors: [new BatchSpanProcessor(makeExporter(), { scheduledDelayMillis: 200 })],
});
const tracer = provider.getTracer("otel-inputs-interop-js", "1.0.0");

function genaiJson(parts) {
  return JSON.stringify(parts);
}

function emitAttempt({ turn, sendKind, previous }) {
  const attemptId = `${runId}-turn${turn}`;
  const user = `${TASK}\n(turn ${turn}: ${sendKind})`;
  const links = [];
  if (previous) {
    links.push({ context: previous.spanContext(), attributes: { "otel_inputs.link.kind": "previous_turn" } });
    if (sendKind !== "initial") {
      links.push({ context: previous.spanContext(), attributes: { "otel_inputs.link.kind": "retry_of" } });
    }
  }
  const attrs = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-js",
    "gen_ai.agent.name": "js-builder",
    "gen_ai.conversation.id": `${runId}-session`,
    "gen_ai.system_instructions": genaiJson([{ type: "text", content: SYSTEM }]),
    "gen_ai.input.messages": genaiJson([{ role: "user", parts: [{ type: "text", content: user }] }]),
    "otel_inputs.run.id": runId,
    "otel_inputs.attempt.id": attemptId,
    "otel_inputs.phase": "build",
    "otel_inputs.send_kind": sendKind,
    "otel_inputs.turn_index": turn,
    "otel_inputs.task.prompt": TASK,
    "otel_inputs.task.source_kind": "inline_text",
    "otel_inputs.task.size_bytes": Buffer.byteLength(TASK, "utf8"),
    "otel_inputs.packet.version": 1,
    "otel_inputs.packet.coverage": "complete",
    "otel_inputs.packet.declared_count": 3,
    "otel_inputs.packet.captured_count": 3,
    "otel_inputs.packet.omitted_count": 0,
    // Three items declared, two events sent: the reader must say partial, not complete.
    "otel_inputs.packet.item_count": 3,
    "otel_inputs.capture.decision": "admitted",
  };
  if (previous) {
    attrs["otel_inputs.previous_turn_attempt_id"] = `${runId}-turn${turn - 1}`;
    if (sendKind !== "initial") attrs["otel_inputs.retry_of_attempt_id"] = `${runId}-turn${turn - 1}`;
  }
  const span = tracer.startSpan(`invoke_agent js-builder`, { kind: SpanKind.INTERNAL, attributes: attrs, links });
  const items = [
    { id: `${attemptId}-in0`, label: HOSTILE_LABEL, source: "context_handoff", delivery: "path_reference", path: "/work/handoff/notes.md" },
    { id: `${attemptId}-in1`, label: "previous envelope", source: "previous_envelope", delivery: "inline" },
  ];
  items.forEach((it, seq) => {
    const ev = {
      "otel_inputs.input.id": it.id,
      "otel_inputs.input.seq": seq,
      "otel_inputs.input.label": it.label,
      "otel_inputs.input.source_kind": it.source,
      "otel_inputs.input.delivery_mode": it.delivery,
      "otel_inputs.input.capture_status": "not_applicable",
      "otel_inputs.input.artifact_status": "never_captured",
      "otel_inputs.input.preview_kind": "none",
    };
    if (it.path) ev["otel_inputs.input.source_path"] = it.path;
    span.addEvent("otel_inputs.input", ev);
  });
  // The model call of this attempt: a GenAI chat span nested under it is a step, not an attempt.
  const chat = tracer.startSpan(
    "chat gpt-js",
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-js",
        "gen_ai.response.model": "gpt-js-0001",
        "gen_ai.usage.input_tokens": 42 + turn,
        "gen_ai.usage.output_tokens": 7,
      },
    },
    trace.setSpan(context.active(), span),
  );
  chat.setStatus({ code: SpanStatusCode.OK });
  chat.end();
  span.setStatus({ code: SpanStatusCode.OK });
  span.end();
  const sc = span.spanContext();
  return { span, record: { attempt_id: attemptId, trace_id: sc.traceId, span_id: sc.spanId, chat_span_id: chat.spanContext().spanId, user_message: user } };
}

const first = emitAttempt({ turn: 1, sendKind: "initial", previous: null });
const second = emitAttempt({ turn: 2, sendKind: "gate_retry", previous: first.span });

await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify({ exporter: kind, system: SYSTEM, task: TASK, hostile_label: HOSTILE_LABEL, attempts: [first.record, second.record] }));
