import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ConnectError, createClient } from '@connectrpc/connect';
import { adapterIdentity } from '@dnc/kit';
import { admissionv1, registryv1 } from '@dnc/proto';
import {
  type AdminEnv,
  type Command,
  type Flags,
  operatorTransport,
  requireFlag,
  timeFlag,
  UsageError,
} from '../cli.js';

/** Lines per Load message: small enough to stream, large enough to keep the RPC overhead low. */
const CHUNK_LINES = 10_000;
const PROGRESS_EVERY = 1_000_000;

export function countryFlag(flags: Flags): string {
  const country = requireFlag(flags, 'country').toLowerCase();
  if (!/^[a-z]{2}$/.test(country)) throw new UsageError('--country must be a two-letter country code');
  return country;
}

/**
 * Where the country's adapter is: `--address`, else DNC_ADAPTER_ADDR_<CC>, else admission's country
 * list (adapters found through discovery, as every other caller finds them).
 */
export async function adapterAddress(flags: Flags, country: string, env: AdminEnv): Promise<string> {
  const explicit = flags['address'];
  const fromEnv = process.env[`DNC_ADAPTER_ADDR_${country.toUpperCase()}`];
  const raw = typeof explicit === 'string' && explicit ? explicit : fromEnv;
  if (raw) return raw.includes('://') ? raw : `http://${raw}`;
  let countries: admissionv1.CountryStatus[];
  try {
    const admin = createClient(
      admissionv1.AdmissionAdminService,
      operatorTransport(env, env.admission, 'admission'),
    );
    ({ countries } = await admin.listCountries({}, { timeoutMs: 3_000 }));
  } catch {
    throw new UsageError(
      `cannot find the ${country} adapter: admission is unreachable; pass --address or DNC_ADAPTER_ADDR_${country.toUpperCase()}`,
    );
  }
  const found = countries.find((c) => c.country === country && (c.adapterAdminAddress || c.adapterAddress));
  if (!found) {
    throw new UsageError(
      `no ${country} adapter is announced; pass --address or DNC_ADAPTER_ADDR_${country.toUpperCase()}`,
    );
  }
  // The adapter's admin listener (Load, status, drills, Describe).
  return found.adapterAdminAddress || found.adapterAddress;
}

const MODES: Record<string, registryv1.LoadMode> = {
  replace: registryv1.LoadMode.REPLACE,
  add: registryv1.LoadMode.ADD,
  remove: registryv1.LoadMode.REMOVE,
};

/** The file (or stdin for `-`) as chunks of lines; never the whole file in memory. */
async function* fileChunks(file: string, onLines: (n: number) => void): AsyncGenerator<string[]> {
  const input = file === '-' ? process.stdin : createReadStream(file);
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let chunk: string[] = [];
  for await (const line of lines) {
    chunk.push(line);
    if (chunk.length === CHUNK_LINES) {
      onLines(chunk.length);
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) {
    onLines(chunk.length);
    yield chunk;
  }
}

/** The load's numeric flags: --max-rejected, --expect-lines, --as-of. */
function loadLimits(flags: Flags): {
  maxRejected: bigint;
  expectLines: number | undefined;
  asOf: number | undefined;
} {
  // Lines that are not numbers of the country a replace or add may hold (default none): such a line
  // may be a registered subscriber the rules do not read, so the load is refused rather than drop it.
  const allowed = flags['max-rejected'] ?? '0';
  if (typeof allowed !== 'string' || !/^[0-9]{1,12}$/.test(allowed))
    throw new UsageError('--max-rejected must be a whole number of lines');
  const maxRejected = BigInt(allowed);
  // The lines the file holds (required for stdin, below): a pipe whose source died ends as cleanly as a
  // whole file does (`curl ... | dnc-admin registry load --file -`), and only the count tells them apart.
  const expectFlag = flags['expect-lines'];
  if (expectFlag !== undefined && (typeof expectFlag !== 'string' || !/^[0-9]{1,12}$/.test(expectFlag)))
    throw new UsageError('--expect-lines must be a whole number of lines');
  const expectLines = typeof expectFlag === 'string' ? Number(expectFlag) : undefined;
  // When the registry was consulted for the file (default: a replace now, an add its base's time; a
  // removal must give it).
  const asOf = timeFlag(flags, 'as-of')?.getTime();
  return { maxRejected, expectLines, asOf };
}

export const registryLoadCommand: Command = {
  name: 'registry load',
  usage:
    'registry load --country CC --file F|- [--mode replace|add|remove] [--max-rejected N] [--allow-shrink] [--as-of ISO-TIME (required with --mode remove)] [--allow-older] [--allow-repeat] [--expect-lines N] [--address HOST:PORT]',
  options: {
    country: { type: 'string' },
    file: { type: 'string' },
    mode: { type: 'string' },
    'max-rejected': { type: 'string' },
    'allow-shrink': { type: 'boolean' },
    'as-of': { type: 'string' },
    'allow-older': { type: 'boolean' },
    'allow-repeat': { type: 'boolean' },
    'expect-lines': { type: 'string' },
    address: { type: 'string' },
  },
  async run(flags, env) {
    const country = countryFlag(flags);
    const file = requireFlag(flags, 'file');
    const modeName = typeof flags['mode'] === 'string' ? flags['mode'] : 'replace';
    const mode = MODES[modeName];
    if (mode === undefined) throw new UsageError('--mode must be replace, add or remove');
    const { maxRejected, expectLines, asOf } = loadLimits(flags);
    // Without its date a removal has no place in the registry's order: a backlog file older than the
    // current copy would answer safe a number registered again since. The adapter refuses it too.
    if (modeName === 'remove' && asOf === undefined)
      throw new UsageError(
        '--mode remove requires --as-of ISO-TIME: when the registry published the removal (an older one than the current copy is refused)',
      );
    // A stream ends the same whether its source finished or died (a dropped `kubectl exec`, a pipe whose
    // writer failed, Ctrl-C of deploy/dnc-admin.sh): only the count tells a whole file from one cut at a
    // line, which would load as the registry and answer safe every number cut off (a review, 2026-12-05).
    if (file === '-' && expectLines === undefined)
      throw new UsageError(
        "--file - requires --expect-lines N, the file's line count (e.g. --expect-lines \"$(awk 'END{print NR}' registry.txt)\"): a cut stream cannot be told from a whole one",
      );
    if (file !== '-') {
      // Fail before connecting when the file cannot be read.
      await new Promise<void>((resolve, reject) => {
        const s = createReadStream(file);
        s.once('open', () => {
          s.destroy();
          resolve();
        });
        s.once('error', () => reject(new UsageError(`cannot read ${file}`)));
      });
    }
    const address = await adapterAddress(flags, country, env);
    const admin = createClient(
      registryv1.RegistryAdminService,
      operatorTransport(env, address, adapterIdentity(country)),
    );
    let sent = 0;
    /** The CLI's own reason to give the upload up, told instead of the stream's cancellation. */
    let failure: UsageError | undefined;
    let nextProgress = PROGRESS_EVERY;
    const started = Date.now();
    async function* requests(): AsyncGenerator<registryv1.LoadRequest | object> {
      const header = {
        country,
        mode,
        maxRejected,
        allowShrink: flags['allow-shrink'] === true,
        // An older copy (a replace or removal dated before the current one, a replace loaded before) or a
        // removal loaded before and followed by others: refused (a number registered since answered safe)
        // unless meant.
        allowOlder: flags['allow-older'] === true,
        allowRepeat: flags['allow-repeat'] === true,
        ...(asOf !== undefined ? { asOf: timestampFromDate(new Date(asOf)) } : {}),
      };
      const chunks = fileChunks(file, (n) => {
        sent += n;
      });
      // The first lines are read before the header: the adapter takes the country's load lock at the header,
      // and a source that writes nothing for a while (`sort -u file | dnc-admin ... --file -`) would hold it
      // meanwhile, and be refused once it had waited DNC_LOAD_CHUNK_IDLE_MS.
      try {
        let next = await chunks.next();
        yield { part: { case: 'header', value: header } };
        for (; !next.done; next = await chunks.next()) {
          yield { part: { case: 'chunk', value: { lines: next.value } } };
          if (sent >= nextProgress) {
            process.stderr.write(
              `registry load: ${sent.toLocaleString('en')} lines sent (${Math.round((Date.now() - started) / 1000)} s)\n`,
            );
            nextProgress += PROGRESS_EVERY;
          }
        }
        // Thrown, the upload ends without its end message: the adapter commits nothing.
        if (expectLines !== undefined && sent !== expectLines) {
          failure = new UsageError(
            `the input ended after ${sent} of the ${expectLines} lines expected (--expect-lines): nothing was loaded`,
          );
          throw failure;
        }
        // The file was read whole: without this the adapter commits nothing (a stream cut short, this
        // process cancelled or out of time, reads as a clean end there).
        yield { part: { case: 'end', value: { lines: BigInt(sent) } } };
      } finally {
        // The upload abandoned (refused busy, cut off): the file or stdin is closed.
        await chunks.return(undefined);
      }
      if (sent >= PROGRESS_EVERY) process.stderr.write('registry load: file sent, building the snapshot\n');
    }
    const res = await admin
      .load(requests() as AsyncIterable<registryv1.LoadRequest>, { timeoutMs: 60 * 60 * 1000 })
      .catch((error: unknown) => {
        if (failure) throw failure;
        // An adapter older than LoadEnd refuses it as a chunk it does not know; nothing was loaded.
        if (error instanceof ConnectError && /only chunks may follow the header/.test(error.rawMessage))
          throw new UsageError(
            `the ${country} adapter is older than this dnc-admin (it does not know the end of a load): ` +
              'upgrade the adapter first. Nothing was loaded.',
          );
        throw error;
      });
    return {
      country,
      mode: modeName,
      snapshot_id: res.snapshotId,
      snapshot_time: res.snapshotTime ? timestampDate(res.snapshotTime).toISOString() : undefined,
      lines_read: Number(res.linesRead),
      accepted: Number(res.accepted),
      rejected: Number(res.rejected),
      registry_size: Number(res.registrySize),
      // The load the current snapshot was made from, again (a retry): nothing was committed.
      already_applied: res.alreadyApplied,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  },
};

/** One adapter's registry: snapshot, age against the country's maximum age, and what the adapter serves. */
async function registryStatus(env: AdminEnv, country: string, address: string) {
  const transport = operatorTransport(env, address, adapterIdentity(country));
  const admin = createClient(registryv1.RegistryAdminService, transport);
  const adapter = createClient(registryv1.RegistryAdapterService, transport);
  const [status, described] = await Promise.all([
    admin.getRegistryStatus({}, { timeoutMs: 5_000 }),
    adapter.describe({}, { timeoutMs: 5_000 }),
  ]);
  const snapshotTime = status.snapshotTime ? timestampDate(status.snapshotTime) : undefined;
  const age = snapshotTime ? Math.round((Date.now() - snapshotTime.getTime()) / 1000) : null;
  const maxAge = Number(status.maxAgeSeconds) || null;
  return {
    country: status.country || country,
    snapshot_id: status.snapshotId || null,
    snapshot_time: snapshotTime?.toISOString() ?? null,
    snapshot_age_seconds: age,
    snapshot_age_days: age === null ? null : Math.round((age / 86_400) * 10) / 10,
    max_age_seconds: maxAge,
    // Past its maximum age the adapter does not answer: the country is not served until a new load.
    stale: age !== null && maxAge !== null && age > maxAge,
    registry_size: Number(status.registrySize),
    adapter: {
      address,
      version: described.adapterVersion,
      status: registryv1.AdapterStatus[described.status]?.toLowerCase() ?? 'unspecified',
      serving_snapshot_id: described.snapshotId || null,
    },
  };
}

export const registryStatusCommand: Command = {
  name: 'registry status',
  usage: 'registry status [--country CC] [--address HOST:PORT]',
  options: { country: { type: 'string' }, address: { type: 'string' } },
  async run(flags, env) {
    if (flags['country'] !== undefined || flags['address'] !== undefined) {
      const country = countryFlag(flags);
      return registryStatus(env, country, await adapterAddress(flags, country, env));
    }
    // Every country with an announced adapter, each with its snapshot's age.
    const admin = createClient(
      admissionv1.AdmissionAdminService,
      operatorTransport(env, env.admission, 'admission'),
    );
    const { countries } = await admin.listCountries({}, { timeoutMs: 3_000 });
    const announced = countries.filter((c) => c.adapterAdminAddress || c.adapterAddress);
    return {
      countries: await Promise.all(
        announced.map((c) => registryStatus(env, c.country, c.adapterAdminAddress || c.adapterAddress)),
      ),
    };
  },
};
