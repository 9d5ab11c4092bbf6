import type { Interceptor } from '@connectrpc/connect';
import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * OpenTelemetry tracing, off by default: on only when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names an OTLP/HTTP receiver. The W3C `traceparent` rides Connect
 * headers (the interceptors below) and JetStream message headers (`injectTraceHeaders` /
 * `extractTraceContext`). Span attributes name routes, methods, statuses and countries only: never a phone
 * number, an API key, a request body or an idempotency key. Without the SDK the API is a no-op.
 */
const TRACER = 'dnc-scrub';

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}

/** Starts the SDK for this process when configured; returns its shutdown (flushes spans), else undefined. */
export function startTracing(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): (() => Promise<void>) | undefined {
  if (!tracingConfigured(env)) return undefined;
  const delay = Number(env['OTEL_BSP_SCHEDULE_DELAY'] ?? 1_000);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), {
        scheduledDelayMillis: Number.isFinite(delay) ? delay : 1_000,
      }),
    ],
  });
  useTracerProvider(provider);
  return () => provider.shutdown();
}

/** Whether a tracer provider was registered here: without one the RPC interceptors are pass-through. */
let tracingOn = false;

/** Registers `provider` for this process (startTracing; a test's in-memory provider). */
export function useTracerProvider(provider: TracerProvider): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracingOn = true;
}

const tracer = () => trace.getTracer(TRACER);

/** Runs `fn` in a new span (active for everything it starts); ends it and records a failure. */
export function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes?: Record<string, string | number>; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { kind: options.kind, ...(options.attributes ? { attributes: options.attributes } : {}) },
    options.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

const headerSetter: TextMapSetter<Headers> = { set: (h, k, v) => h.set(k, v) };
const headerGetter: TextMapGetter<Headers> = {
  get: (h, k) => h.get(k) ?? undefined,
  keys: (h) => [...h.keys()],
};

/** Client side of a Connect call: a CLIENT span, and its context in `traceparent`. */
export const traceClientCalls: Interceptor = (next) => (req) =>
  tracingOn ? tracedCall(next, req, SpanKind.CLIENT, context.active()) : next(req);

/** Server side of a Connect call: a SERVER span, child of the caller's `traceparent`. */
export const traceServerCalls: Interceptor = (next) => (req) =>
  tracingOn
    ? tracedCall(next, req, SpanKind.SERVER, propagation.extract(context.active(), req.header, headerGetter))
    : next(req);

type Next = Parameters<Interceptor>[0];
type Request = Parameters<Next>[0];

/**
 * One call in its span. A unary call's span ends when `next` settles; a streamed answer's (GetJobResult)
 * when its stream ends: read to its end, failed, given up by its reader, or its call aborted (a reader
 * that stops without closing the stream). Ending at `next` timed a 25 MiB download as the first
 * message's wait and lost its failure. The stream's messages are produced with the span active, so the
 * handler's own calls (a database read between two segments) are its children.
 */
async function tracedCall(next: Next, req: Request, kind: SpanKind, parent: Context) {
  const span = tracer().startSpan(
    `${req.service.typeName}/${req.method.name}`,
    { kind, attributes: { 'rpc.system': 'connect', 'rpc.method': req.method.name } },
    parent,
  );
  const active = trace.setSpan(parent, span);
  let ended = false;
  const end = (error?: unknown) => {
    if (ended) return;
    ended = true;
    req.signal.removeEventListener('abort', onAbort);
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(error) });
    span.end();
  };
  const onAbort = () => end();
  req.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await context.with(active, () => {
      if (kind === SpanKind.CLIENT) propagation.inject(active, req.header, headerSetter);
      return next(req);
    });
    if (!res.stream) {
      end();
      return res;
    }
    return { ...res, message: endWithStream(res.message, active, end) };
  } catch (error) {
    end(error);
    throw error;
  }
}

async function* endWithStream<T>(
  messages: AsyncIterable<T>,
  active: Context,
  end: (error?: unknown) => void,
): AsyncGenerator<T> {
  const it = messages[Symbol.asyncIterator]();
  let done = false;
  try {
    for (;;) {
      const step = await context.with(active, () => it.next());
      if (step.done) break;
      yield step.value;
    }
    done = true;
  } catch (error) {
    done = true;
    end(error);
    throw error;
  } finally {
    // Given up at a yield: close the stream underneath (as `for await` would).
    if (!done) await it.return?.();
    end();
  }
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : 'error');

/**
 * A SERVER span for an incoming HTTP request (the gateway), child of the client's `traceparent` when it
 * sent one; `context` makes it the active span for the work of the request. The caller ends it.
 */
export function startServerSpan(
  name: string,
  carrier: Record<string, unknown>,
  attributes: Record<string, string | number>,
): { span: Span; context: Context } {
  const parent = propagation.extract(context.active(), carrier);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` with `ctx` (a span's context) active. */
export function withTraceContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** Minimal view of NATS message headers (MsgHdrs). */
export interface MessageHeaders {
  set(key: string, value: string): void;
  get(key: string): string;
  keys(): string[];
}

export function injectTraceHeaders(headers: MessageHeaders): void {
  propagation.inject(context.active(), headers, { set: (h, k, v) => h.set(k, v) });
}

export function extractTraceContext(headers: MessageHeaders | undefined): Context {
  if (!headers) return context.active();
  return propagation.extract(context.active(), headers, {
    get: (h, k) => h.get(k) || undefined,
    keys: (h) => h.keys(),
  });
}

export type { Context as TraceContext, Span } from '@opentelemetry/api';
export { SpanKind };
