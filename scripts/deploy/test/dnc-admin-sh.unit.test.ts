import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

// Found by a review of the operator tools (2026-12-05): deploy/dnc-admin.sh ran the CLI as the pod's own
// process (`kubectl run --rm -i`), and a container's output is written to the node's container log
// whoever is attached: `key create` printed the API key and `user invite` the one-time link there, for log
// shippers and anyone allowed `pods/log`. The pod now only waits, and the command runs through
// `kubectl exec`, whose output is not logged. A stand-in `kubectl` records what the script asks of it.
const SCRIPT = resolve(import.meta.dirname, '../../../deploy/dnc-admin.sh');

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function run(args: string[], execStatus = 0) {
  dir = mkdtempSync(join(tmpdir(), 'dnc-admin-sh-'));
  const calls = join(dir, 'calls');
  writeFileSync(
    join(dir, 'kubectl'),
    `#!/usr/bin/env bash
printf '%s\\0' "$@" >> ${JSON.stringify(calls)}
printf '\\036' >> ${JSON.stringify(calls)}
case " $* " in
  *" get deployment "*) echo registry.example/dnc-scrub:1.0.0 ;;
  *" exec "*) echo '{"api_key":"dnc_live_secret"}'; exit ${execStatus} ;;
esac
`,
  );
  chmodSync(join(dir, 'kubectl'), 0o755);
  let status = 0;
  let stdout = '';
  try {
    stdout = execFileSync('bash', [SCRIPT, ...args], {
      env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
      encoding: 'utf8',
    });
  } catch (error) {
    status = (error as { status: number }).status;
  }
  const invocations = readFileSync(calls, 'utf8')
    .split('\x1e')
    .filter(Boolean)
    .map((line) => line.split('\0').filter(Boolean));
  return { status, stdout, invocations };
}

describe('deploy/dnc-admin.sh', () => {
  it('runs the command through kubectl exec in a pod that only waits, then deletes the pod', () => {
    const { status, stdout, invocations } = run(['key', 'create', '--org', 'o-1']);
    expect(status).toBe(0);
    expect(stdout).toContain('dnc_live_secret');
    const verbs = invocations.map((a) => a.find((w) => ['get', 'run', 'wait', 'exec', 'delete'].includes(w)));
    expect(verbs).toEqual(['get', 'run', 'wait', 'exec', 'delete']);
    const created = invocations.find((a) => a.includes('run'))!;
    const spec = created.find((a) => a.startsWith('--overrides='))!;
    // The pod's own process never sees the command: nothing of it can reach the container log.
    expect(spec).not.toContain('admin-cli');
    expect(spec).not.toContain('key');
    expect(created).not.toContain('--rm');
    const exec = invocations.find((a) => a.includes('exec'))!;
    expect(exec.slice(exec.indexOf('--'))).toEqual([
      '--',
      'node',
      'packages/admin-cli/dist/main.js',
      'key',
      'create',
      '--org',
      'o-1',
    ]);
  });

  it("answers the command's exit status, the pod deleted all the same", () => {
    const { status, invocations } = run(['org', 'create', '--name', 'Acme'], 1);
    expect(status).toBe(1);
    expect(invocations.at(-1)).toContain('delete');
  });
});
