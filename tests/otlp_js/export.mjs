// One support-agent run, traced with the OpenTelemetry JavaScript SDK and sent by its own OTLP
// exporter to `otel-traj serve`. Prints the trace id; exits 1 if the exporter reports a failure.
//
//   node export.mjs grpc|http/protobuf|http/json <base URL, e.g. http://127.0.0.1:4317>
import { context, trace, SpanStatusCode } from "@opentelemetry/api";
import { OTLPTraceExporter as GrpcExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

const [protocol, url] = process.argv.slice(2);
const exporters = {
  grpc: () => new GrpcExporter({ url }),
  "http/protobuf": () => new ProtoExporter({ url: `${url}/v1/traces`, compression: "gzip" }),
  "http/json": () => new JsonExporter({ url: `${url}/v1/traces` }),
};
const inner = exporters[protocol]();
const failures = [];
// The exporter's own result codes: a refused or failed export must fail the run, not just log.
const exporter = {
  export(spans, done) {
    inner.export(spans, (result) => {
      if (result.code !== 0) failures.push(String(result.error ?? result.code));
      done(result);
    });
  },
  forceFlush: () => inner.forceFlush(),
  shutdown: () => inner.shutdown(),
};

const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "js-support-agent", "service.version": "3.0.0" }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
const tracer = provider.getTracer("support-agent");
const user = "Customer C023 here. I was charged twice for invoice INV-1002.";

// Explicit timestamps, as a model's latency would space them: the SDK's own clock stamps starts to
// the millisecond only, too coarse to order steps that run within one.
const epoch = Math.floor(Date.now() / 1000);
const at = (ms) => [epoch + Math.floor(ms / 1000), (ms % 1000) * 1e6];
let now = 0;

const root = tracer.startSpan(
  "invoke_agent support_agent",
  {
    startTime: at(now),
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "support_agent",
      "gen_ai.conversation.id": `conv-js-${protocol}`,
      "app.customer_id": "C023",
    },
  },
);
const inRun = trace.setSpan(context.active(), root);

function chat(calls) {
  const parts = calls.map(([name, args], i) => ({ type: "tool_call", id: `call_${name}_${i}`, name, arguments: args }));
  const span = tracer.startSpan(
    "chat gpt-4o-mini",
    {
      startTime: at((now += 1)),
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: [{ type: "text", content: user }] }]),
        "gen_ai.output.messages": JSON.stringify([{ role: "assistant", parts }]),
      },
    },
    inRun,
  );
  span.end(at((now += 40)));
}

function tool(name, args, error) {
  const span = tracer.startSpan(
    `execute_tool ${name}`,
    {
      startTime: at((now += 1)),
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": JSON.stringify(args),
      },
    },
    inRun,
  );
  if (error) {
    span.setAttribute("error.type", "ToolError");
    span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  } else {
    span.setAttribute("gen_ai.tool.call.result", JSON.stringify({ status: "ok" }));
  }
  span.end(at((now += 15)));
}

chat([["get_subscription", { customer_id: "C023" }]]);
tool("get_subscription", { customer_id: "C023" });
chat([["list_invoices", { customer_id: "C028" }]]);
tool("list_invoices", { customer_id: "C028" });
chat([["check_payment", { invoice_id: "INV-1002" }]]);
tool("check_payment", { invoice_id: "INV-1002" }, "payment gateway timeout");
root.end(at((now += 1)));

await provider.forceFlush();
await provider.shutdown();
if (failures.length) {
  console.error(`export failed: ${failures.join("; ")}`);
  process.exit(1);
}
console.log(root.spanContext().traceId);
