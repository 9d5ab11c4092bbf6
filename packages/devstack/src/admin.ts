import { spawn } from 'node:child_process';
import path from 'node:path';

/** Run `dnc-admin` (the built CLI) with `env` and parse its JSON output; rejects with its one-line error. */
export function runAdmin(
  root: string,
  env: Record<string, string>,
  args: string[],
  input?: string,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'packages/admin-cli/dist/main.js'), ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.stdin.end(input ?? '');
    child.once('exit', (code) => {
      if (code !== 0)
        return reject(new Error(`dnc-admin ${args[0]} ${args[1] ?? ''} failed (${code}): ${err.trim()}`));
      try {
        resolve(out.trim() ? JSON.parse(out) : null);
      } catch {
        reject(new Error(`dnc-admin printed no JSON: ${out.slice(0, 200)}`));
      }
    });
  });
}
