// What a scenario reads about the processes: resident memory and open file descriptors (Linux /proc),
// and Prometheus counters from a process's metrics port.
import { readdirSync, readFileSync } from 'node:fs';

export function rssMiB(pid) {
  try {
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Math.round(kb / 1024);
  } catch {
    return Number.NaN;
  }
}

export function openFds(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** RSS and descriptors of every process of the stack, by name. */
export function snapshot(stack) {
  const out = {};
  for (const [name] of stack.processes) {
    const pid = stack.child(name)?.pid;
    if (pid) out[name] = { rss: rssMiB(pid), fds: openFds(pid) };
  }
  return out;
}

/** Sum of a counter or gauge (every label set whose labels contain `match`) on one process. */
export async function metric(stack, processName, name, match = '') {
  const port = stack.addresses.metrics[processName];
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) })
    ).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if ((line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && line.includes(match))
        sum += Number(line.split(' ').at(-1));
    }
    return sum;
  } catch {
    return Number.NaN;
  }
}

/** `{ heapUsed, heapTotal }` of a process's V8 heap in MiB, from its metrics (NaN when unreadable). */
export async function heapOf(stack, processName) {
  const port = stack.addresses.metrics[processName];
  const out = { heapUsed: Number.NaN, heapTotal: Number.NaN };
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) })
    ).text();
    for (const line of text.split('\n')) {
      const mib = Number(line.split(' ').at(-1)) / 2 ** 20;
      if (line.startsWith('nodejs_heap_size_used_bytes')) out.heapUsed = mib;
      else if (line.startsWith('nodejs_heap_size_total_bytes')) out.heapTotal = mib;
    }
  } catch {}
  return out;
}

/**
 * The live JavaScript heap of a process in MiB: a full collection asked for through its inspector
 * (the chaos stack starts every process with `--inspect=127.0.0.1:0`; the address is the last one it
 * printed), then the heap in use. NaN when there is no inspector or no WebSocket client (Node 20
 * without --experimental-websocket).
 */
export async function liveHeapMiB(stack, processName, timeoutMs = 15_000) {
  const url = [...stack.logsOf(processName).matchAll(/Debugger listening on (ws:\/\/\S+)/g)].at(-1)?.[1];
  if (!url || typeof WebSocket !== 'function') return Number.NaN;
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const done = (value) => {
      clearTimeout(timer);
      try {
        ws.close();
      } catch {}
      resolve(value);
    };
    const timer = setTimeout(() => done(Number.NaN), timeoutMs);
    ws.onerror = () => done(Number.NaN);
    ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    ws.onmessage = (event) => {
      const msg = JSON.parse(String(event.data));
      if (msg.id === 1) ws.send(JSON.stringify({ id: 2, method: 'Runtime.getHeapUsage' }));
      else if (msg.id === 2) done(msg.result ? msg.result.usedSize / 2 ** 20 : Number.NaN);
    };
  });
}

/**
 * Memory of every process of the stack, one at a time: the live heap after a full collection, then
 * RSS, descriptors and what V8 has committed for its heap (`heapTotal`), read right after it.
 */
export async function memorySnapshot(stack) {
  const out = {};
  for (const [name] of stack.processes) {
    const pid = stack.child(name)?.pid;
    if (!pid) continue;
    const live = await liveHeapMiB(stack, name);
    const { heapTotal } = await heapOf(stack, name);
    out[name] = { live, heapTotal, rss: rssMiB(pid), fds: openFds(pid) };
  }
  return out;
}

export const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)} ms` : '-');
