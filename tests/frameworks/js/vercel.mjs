// The Vercel AI SDK against the fake OpenAI-compatible server on 127.0.0.1, two turns of one session
// with a read_file tool, its telemetry sent over OTLP/HTTP (protobuf) to otel-inputs collect
// (tests/frameworks).  Usage: node vercel.mjs <6|7> <collector http endpoint> <fake base url> <session>
//   6: ai@6 with experimental_telemetry (its own ai.* spans);
//   7: ai@7 with @ai-sdk/otel registered (GenAI-convention spans).
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { z } from 'zod';

const [version, endpoint, baseURL, session] = process.argv.slice(2);
const SYSTEM = 'You are a careful assistant. Read files with the read_file tool before answering.';
const TASKS = ['Summarise notes/handoff.md in one line.', 'Now list the open questions from that file.'];
mkdirSync('notes', { recursive: true });
writeFileSync('notes/handoff.md', '# Handoff\n\nThe parser fails on empty input. Open question: who owns the fixtures?\n');

const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': `vercel-ai-${version}` }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
});
trace.setGlobalTracerProvider(provider);
// What NodeSDK registers: the active span follows async calls, so model and tool spans nest under the call's span.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const ai = version === '6' ? await import('ai6') : await import('ai');
const { createOpenAICompatible } = version === '6' ? await import('openai-compatible-2') : await import('@ai-sdk/openai-compatible');
if (version === '7') {
  const { OpenTelemetry } = await import('@ai-sdk/otel');
  ai.registerTelemetry(new OpenTelemetry({ tracer: provider.getTracer('ai') }));
}
const fake = createOpenAICompatible({ name: 'fake', baseURL, apiKey: 'sk-fake', includeUsage: true });
const readFile = ai.tool({
  description: 'Read a text file of the working directory.',
  inputSchema: z.object({ path: z.string() }),
  execute: async ({ path }) => readFileSync(path, 'utf8'),
});

const messages = [];
const replies = [];
for (const task of TASKS) {
  messages.push({ role: 'user', content: task });
  const options = {
    model: fake.chatModel('gpt-fake'),
    system: SYSTEM,
    messages,
    tools: { read_file: readFile },
    stopWhen: ai.stepCountIs(5),
  };
  if (version === '6') {
    options.experimental_telemetry = { isEnabled: true, functionId: 'coder', tracer: provider.getTracer('ai'),
                                       metadata: { sessionId: session } };
  } else {
    options.experimental_telemetry = { isEnabled: true, functionId: 'coder', metadata: { sessionId: session } };
  }
  const result = await ai.generateText(options);
  messages.push(...result.response.messages);
  replies.push(result.text);
}
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify({ replies }));
