import { commonConfig, port, z } from '@dnc/kit';

export const quotaConfig = z.object({
  ...commonConfig,
  DNC_GRPC_PORT: port(50052),
  /** v1 reservations still open after this are left behind by a crashed caller and released. */
  DNC_SYNC_RESERVATION_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(300),
  DNC_RESERVATION_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
});

export type QuotaConfig = z.infer<typeof quotaConfig>;
