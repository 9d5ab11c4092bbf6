import { ErrorBody, LIMITS, REGISTRY_SNAPSHOT_HEADER, ScrubRequest, ScrubResult } from '@dnc/api-contract';
import type { FastifyInstance } from 'fastify';
import { checkedByAdmit, scrubCaller, setRateLimitHeaders } from '../auth.js';
import type { GatewayConfig } from '../config.js';
import { deadlineOf } from '../deadline.js';
import { sendMapped } from '../errors.js';
import type { Fingerprints, ScrubBody } from '../flows/admit.js';
import type { EarlyChecks } from '../flows/early-check.js';
import { scrubV1, type V1Upstream } from '../flows/v1-scrub.js';
import { idempotencyKeyOf } from '../idempotency-key.js';

/** POST /v1/scrub: HTTP in and out; the request itself is `scrubV1` (flows/v1-scrub.ts). */
export function v1Routes(
  config: GatewayConfig,
  deps: Fingerprints & { upstream: V1Upstream; early: EarlyChecks | undefined },
) {
  const { upstream, early, ...fingerprints } = deps;
  return async (app: FastifyInstance) => {
    app.post<{ Body: ScrubBody }>(
      '/v1/scrub',
      {
        config: { auth: true, authWithAdmit: true, phonesFromBytes: LIMITS.v1MaxInputs },
        schema: {
          body: ScrubRequest,
          response: { 200: ScrubResult, '4xx': ErrorBody, '5xx': ErrorBody },
        },
      },
      async (request, reply) => {
        const deadline = deadlineOf(request.receivedAt, config.DNC_V1_BUDGET_MS);
        const scrub = {
          caller: scrubCaller(request),
          idempotencyKey: idempotencyKeyOf(request),
          country: request.body.country,
          phones: request.bodyPhones ?? request.body.phones,
        };
        const flow = { upstream, ...fingerprints, log: request.log, ...(early ? { early } : {}) };
        const outcome = await scrubV1(flow, scrub, deadline).finally(() => checkedByAdmit(request));
        setRateLimitHeaders(reply, outcome.rateLimit);
        if (!outcome.ok) return sendMapped(reply, outcome.error);
        if (outcome.replayed) reply.header('idempotency-replayed', 'true');
        if (outcome.snapshotAt) reply.header(REGISTRY_SNAPSHOT_HEADER, outcome.snapshotAt.toISOString());
        return reply.type('application/json; charset=utf-8').send(outcome.body);
      },
    );
  };
}
