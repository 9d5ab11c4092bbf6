import { ErrorBody, ScrubRequest, ScrubResult } from '@dnc/api-contract';
import { buildScrubResult } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { admitScrub, type ScrubBody } from '../admit.js';
import type { Upstreams } from '../clients.js';
import type { GatewayConfig } from '../config.js';
import { requestDeadline } from '../deadline.js';
import { fromRpcError, type MappedError, sendMapped, toHttp } from '../errors.js';
import { idempotencyKeyOf } from '../idempotency-key.js';

// Time kept back from the adapter's share of the budget for Complete (quota commit + usage record).
const COMPLETE_RESERVE_MS = 1_000;
const ABORT_TIMEOUT_MS = 2_000;

/**
 * POST /v1/scrub: gateway -> admission.Admit -> adapter.Check -> admission.Complete, all inside one
 * 15-second deadline. Any failure after admission aborts it (reservation released, idempotency claim
 * removed) and answers with the public error only: never a partial result, never a charge.
 */
export function v1Routes(config: GatewayConfig, upstreams: Upstreams) {
  return async (app: FastifyInstance) => {
    app.post<{ Body: ScrubBody }>(
      '/v1/scrub',
      {
        config: { auth: true, authWithAdmit: true },
        schema: {
          body: ScrubRequest,
          response: { 200: ScrubResult, '4xx': ErrorBody, '5xx': ErrorBody },
        },
      },
      async (request, reply) => {
        const deadline = requestDeadline(request, config.DNC_V1_BUDGET_MS);
        const idempotencyKey = idempotencyKeyOf(request);
        const { country, phones } = request.body;

        let admitted: admissionv1.AdmitResponse;
        try {
          admitted = await admitScrub(
            config,
            upstreams,
            request,
            reply,
            idempotencyKey,
            request.body,
            admissionv1.RequestKind.SYNC,
            deadline.remaining(5_000),
          );
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }

        const abort = async () => {
          if (admitted.replay) return;
          try {
            await upstreams.admission.abort(
              { admissionId: admitted.admissionId },
              { timeoutMs: ABORT_TIMEOUT_MS },
            );
          } catch {
            // Admission's sweeper releases an abandoned v1 claim after its bound.
            request.log.warn('abort of a failed v1 admission did not complete');
          }
        };

        let failure: MappedError;
        try {
          if (!admitted.adapterAddress) throw new Error('no adapter address');
          const answer = await upstreams.batched.check(
            admitted.adapterAddress,
            country,
            phones,
            deadline.remaining() - COMPLETE_RESERVE_MS,
          );
          const result = buildScrubResult(phones, answer.outcomes);
          const body = JSON.stringify(result);
          if (admitted.replay) {
            reply.header('idempotency-replayed', 'true');
          } else {
            try {
              await upstreams.batched.complete(admitted.admissionId, Math.max(deadline.remaining(), 250));
            } catch (error) {
              await abort();
              return sendMapped(reply, fromRpcError(error));
            }
          }
          return reply.type('application/json; charset=utf-8').send(body);
        } catch (error) {
          // The adapter's own public reason when it gave one (maintenance); otherwise the country is
          // temporarily unavailable: an unreachable, slow or inconclusive adapter is a country failure.
          failure = deadline.expired()
            ? toHttp('country_service_temporarily_unavailable', undefined, 1)
            : fromRpcError(error, 'country_service_temporarily_unavailable', { unexpectedIsInternal: false });
        }
        await abort();
        return sendMapped(reply, failure);
      },
    );
  };
}
