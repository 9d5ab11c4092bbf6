import type { Stack } from '@dnc/devstack';

export interface SeededOrg {
  orgId: string;
  apiKey: string;
  keyId: string;
  purchases: Record<string, string>;
}

/**
 * An organization with an API key and active, activated purchases for the given countries, created
 * through `dnc-admin` as an operator would.
 */
export async function seedOrg(
  stack: Stack,
  countries: readonly string[] = ['co'],
  options: { quota?: number; name?: string } = {},
): Promise<SeededOrg> {
  const org = (await stack.admin(['org', 'create', '--name', options.name ?? 'Test Org'])) as {
    org_id: string;
  };
  const key = (await stack.admin(['key', 'create', '--org', org.org_id])) as {
    key_id: string;
    api_key: string;
  };
  const purchases: Record<string, string> = {};
  for (const country of countries) {
    const args = ['purchase', 'create', '--org', org.org_id, '--country', country];
    if (options.quota !== undefined) args.push('--quota', String(options.quota));
    const p = (await stack.admin(args)) as { purchase_id: string };
    await stack.admin(['purchase', 'pay', '--purchase', p.purchase_id]);
    if (country !== 'co') await stack.admin(['purchase', 'activate', '--purchase', p.purchase_id]);
    purchases[country] = p.purchase_id;
  }
  return { orgId: org.org_id, apiKey: key.api_key, keyId: key.key_id, purchases };
}

/** Load registry lines for a country through `dnc-admin registry load` (replace by default). */
export async function loadRegistry(
  stack: Stack,
  country: string,
  lines: string[],
  mode: 'replace' | 'add' | 'remove' = 'replace',
): Promise<unknown> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const path = await import('node:path');
  const dir = mkdtempSync(path.join(tmpdir(), 'dnc-registry-'));
  const file = path.join(dir, `${country}.txt`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const result = await stack.admin([
    'registry',
    'load',
    '--country',
    country,
    '--file',
    file,
    '--mode',
    mode,
    // A fixture: the registry is these lines now, whatever was loaded before (the same lines loaded
    // before and followed by other loads are otherwise refused as an older copy).
    ...(mode === 'replace' ? ['--allow-older'] : []),
  ]);
  await waitCountryServing(stack, country);
  return result;
}

/** Discovery is eventually consistent (well under a second here): wait until admission sees the country serving. */
export async function waitCountryServing(stack: Stack, country: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const list = (await stack.admin(['country', 'list'])) as {
      countries: { country: string; adapter_serving: boolean }[];
    };
    if (list.countries.find((c) => c.country === country)?.adapter_serving) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`country ${country} not serving in discovery after ${timeoutMs} ms`);
}

/** An organization's figures for one country, read through `dnc-admin` as an operator would. */
export async function accountUsage(
  stack: Stack,
  orgId: string,
  country: string,
): Promise<{ used: number; reserved: number; records: number }> {
  const q = (await stack.admin(['quota', 'show', '--org', orgId])) as {
    accounts: { country: string; used: number; reserved: number }[];
  };
  const a = q.accounts.find((x) => x.country === country);
  const records = ((await stack.admin(['usage', '--org', orgId])) as { records: unknown[] }).records.length;
  return { used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0), records };
}
