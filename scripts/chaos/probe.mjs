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

export const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)} ms` : '-');
