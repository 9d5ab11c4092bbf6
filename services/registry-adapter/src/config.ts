import { COUNTRY_CODES, TECHNICAL_COUNTRIES } from '@dnc/api-contract/limits';
import { commonConfig, flag, port, serviceAddress, z } from '@dnc/kit';

// The live countries' registries are local copies (loaded with `dnc-admin registry load`); the
// technical countries' registries are only reachable through a remote API.

export const adapterConfig = z
  .object({
    ...commonConfig,
    COUNTRY: z.enum(COUNTRY_CODES),
    DNC_GRPC_PORT: port(50061),
    /** Address other services use to reach this instance; defaults to http://127.0.0.1:<port>. */
    DNC_ADVERTISE_ADDR: serviceAddress('http://127.0.0.1:0').optional(),
    /** The admin listener's address as announced in discovery (dnc-admin finds it there). */
    DNC_ADVERTISE_ADMIN_ADDR: serviceAddress('http://127.0.0.1:0').optional(),
    DNC_ENABLE_DRILLS: flag(false),
    /** `local` (registry copy in Postgres, default) or `remote` (the registry's own API). */
    DNC_REGISTRY_PROVIDER: z.enum(['local', 'remote']).default('local'),
    /** Base URL of the remote registry API (provider `remote`): https only. */
    DNC_REMOTE_REGISTRY_URL: z
      .string()
      .url()
      .refine((v) => v.startsWith('https://'), 'must be an https:// URL')
      .optional(),
    /** PEM file of the CA that signs a registry's certificate, when it is not a public one. */
    DNC_REMOTE_REGISTRY_CA_FILE: z.string().min(1).optional(),
    DNC_REMOTE_BATCH_SIZE: z.coerce.number().int().min(1).max(100_000).default(500),
    DNC_REMOTE_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(3_000),
    DNC_REMOTE_RETRIES: z.coerce.number().int().min(0).max(5).default(2),
    /** How often every replica looks for a new snapshot. */
    DNC_SNAPSHOT_POLL_MS: z.coerce.number().int().min(100).max(60_000).default(1_000),
    /**
     * A replica that has not read the store's current snapshot pointer for this long (its database out
     * of reach) answers nothing and announces itself unavailable: it cannot know whether a newer snapshot
     * was loaded.
     */
    DNC_SNAPSHOT_MAX_LAG_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
    /**
     * How long a replica answers from the snapshot it holds once the store's current snapshot is another
     * it does not serve yet: being read (10 M keys: 13-17 s; a read is bounded at 10 minutes), refused
     * (other numbering rules) or failing to read. Past it the replica answers nothing and announces itself
     * unavailable until it serves the current snapshot: never the numbers registered since answered safe.
     */
    DNC_SNAPSHOT_MAX_BEHIND_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
    /**
     * Oldest registry snapshot (local provider) the adapter answers from, in seconds; past it the country is
     * not served. Default: the country's refresh period (providers/freshness.ts, DEFAULT_MAX_AGE_SECONDS).
     */
    DNC_REGISTRY_MAX_AGE_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(400 * 86_400)
      .optional(),
    /** Discovery heartbeat. */
    ADAPTER_HEARTBEAT_MS: z.coerce.number().int().min(200).max(30_000).default(2_000),
    /**
     * A load's PostgreSQL connection (which holds the country's load lock) idle this long is closed by the
     * server, the lock with it: an adapter frozen or cut off mid-load blocks the others' loads that long
     * (inside a COPY, where the session is not idle, up to the COPY's own bound: 10 minutes). At least the
     * longest the load's event loop may be blocked (sorting 30 M keys: a few seconds) times 3/2.
     */
    DNC_LOAD_LOCK_IDLE_MS: z.coerce.number().int().min(3_000).max(600_000).default(30_000),
    /**
     * How long a load waits for its uploader's next chunk. It reads its file holding the country's load lock,
     * so an uploader that stopped sending (its stream still open) would keep every other load of the country
     * refused as busy; past this the load fails, writing nothing, and the lock is released.
     */
    DNC_LOAD_CHUNK_IDLE_MS: z.coerce.number().int().min(3_000).max(3_600_000).default(60_000),
    /**
     * A registry file loaded as the first snapshot when the store has none (development stacks and
     * end-to-end tests). Ignored once any snapshot exists.
     */
    DNC_REGISTRY_SEED_FILE: z.string().optional(),
    npm_package_version: z.string().optional(),
  })
  .superRefine((c, ctx) => {
    const remoteOnly = (TECHNICAL_COUNTRIES as readonly string[]).includes(c.COUNTRY);
    if (remoteOnly && c.DNC_REGISTRY_PROVIDER !== 'remote') {
      ctx.addIssue({
        code: 'custom',
        path: ['COUNTRY'],
        message: `${c.COUNTRY} is served only with DNC_REGISTRY_PROVIDER=remote`,
      });
    }
    if (c.DNC_REGISTRY_PROVIDER === 'remote' && !c.DNC_REMOTE_REGISTRY_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['DNC_REMOTE_REGISTRY_URL'],
        message: 'required with DNC_REGISTRY_PROVIDER=remote',
      });
    }
  });

export type AdapterConfig = z.infer<typeof adapterConfig>;
export type AdapterCountry = AdapterConfig['COUNTRY'];
