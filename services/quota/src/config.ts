import { commonConfig, port, z } from '@dnc/kit';

export const quotaConfig = z.object({
  ...commonConfig,
  DNC_GRPC_PORT: port(50052),
});

export type QuotaConfig = z.infer<typeof quotaConfig>;
