import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AdminEnv, UsageError } from '../src/cli.js';
import { registryLoadCommand } from '../src/commands/registry.js';

/** An environment the command may not touch: any service it reaches for (discovery, a connection) throws. */
const untouchable = new Proxy({} as AdminEnv, {
  get: (_target, name) => {
    throw new Error(`the command reached for the admin environment (${String(name)})`);
  },
});

const file = join(mkdtempSync(join(tmpdir(), 'dnc-admin-registry-')), 'removals.txt');
writeFileSync(file, '+52 55 1234 5678\n');
const load = (flags: Record<string, string>) =>
  registryLoadCommand.run({ country: 'mx', file, address: '127.0.0.1:1', ...flags }, untouchable, []);

// Found by a review (2026-12-05): a removal loaded without --as-of skipped every order check, so a backlog
// removal file older than the current copy was applied, answering safe a number registered again since.
describe('dnc-admin registry load --mode remove', () => {
  it('requires --as-of: a usage error before anything is read or sent', async () => {
    const refused = load({ mode: 'remove' });
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow(/--mode remove requires --as-of/);
  });

  it('goes on to the upload with --as-of; an add or a replace goes on without it', async () => {
    const goOn: Record<string, string>[] = [
      { mode: 'remove', 'as-of': '2026-12-01T00:00:00Z' },
      { mode: 'add' },
      {},
    ];
    for (const flags of goOn) await expect(load(flags)).rejects.toThrow(/reached for the admin environment/);
  });
});

// Found by a review of this session's change (2026-12-05): through deploy/dnc-admin.sh (`kubectl exec -i`),
// a dropped connection or Ctrl-C closes the command's stdin as cleanly as the file's end, and the lines
// read so far were loaded as the whole registry (an add missing numbers, a replace keeping over half).
describe('dnc-admin registry load --file -', () => {
  it('requires --expect-lines: a usage error before anything is read or sent', async () => {
    const refused = load({ file: '-' });
    await expect(refused).rejects.toBeInstanceOf(UsageError);
    await expect(refused).rejects.toThrow(/--file - requires --expect-lines/);
  });

  it('goes on to the upload with it; a named file goes on without it', async () => {
    const goOn: Record<string, string>[] = [{ file: '-', 'expect-lines': '1' }, {}];
    for (const flags of goOn) await expect(load(flags)).rejects.toThrow(/reached for the admin environment/);
  });
});
