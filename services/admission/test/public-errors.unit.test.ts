import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { createLogger, publicError, Registry, readPublicReason } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { Refusals } from '../src/public-errors.js';

/** AdmissionService (and the admin service) in memory, each method throwing what `fail` gives. */
function service(fail: () => Error) {
  const metrics = new Registry();
  const refusals = new Refusals(metrics, createLogger('admission-test', 'silent'));
  const transport = createRouterTransport(
    (router) => {
      router.service(admissionv1.AdmissionService, {
        abort: () => Promise.reject(fail()),
        confirmJob: () => Promise.reject(fail()),
      });
      router.service(admissionv1.AdmissionAdminService, {
        listCountries: () => Promise.reject(fail()),
      });
    },
    { router: { interceptors: [refusals.interceptor(admissionv1.AdmissionService.typeName)] } },
  );
  return {
    admission: createClient(admissionv1.AdmissionService, transport),
    admin: createClient(admissionv1.AdmissionAdminService, transport),
    metrics,
  };
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

describe("admission's error boundary (Refusals.interceptor): only public reasons leave AdmissionService", () => {
  it('a dependency failing is 503 platform_failure with Retry-After, counted, without its message', async () => {
    const s = service(() => new Error('connect ECONNREFUSED 10.0.0.7:5432'));
    const error = await failure(s.admission.abort({ admissionId: '0' }));
    expect(error.code).toBe(Code.Unavailable);
    expect(readPublicReason(error)).toMatchObject({ reason: 'platform_failure', retryAfterSeconds: 2 });
    expect(error.message).not.toMatch(/ECONNREFUSED|10\.0\.0\.7/);
    expect(await s.metrics.getSingleMetricAsString('dnc_admission_rejections_total')).toMatch(
      /reason="platform_failure"} 1/,
    );
  });

  it('a public reason passes unchanged', async () => {
    const s = service(() =>
      publicError(Code.AlreadyExists, 'idempotency_key_reused', { message: 'use a new key' }),
    );
    const error = await failure(s.admission.confirmJob({}));
    expect(error.code).toBe(Code.AlreadyExists);
    expect(readPublicReason(error)).toMatchObject({
      reason: 'idempotency_key_reused',
      message: 'use a new key',
    });
  });

  it('the precondition and not-found answers of Complete, Abort and ConfirmJob pass unchanged', async () => {
    const s = service(() => new ConnectError('no job admission with this id', Code.NotFound));
    const error = await failure(s.admission.confirmJob({}));
    expect(error.code).toBe(Code.NotFound);
    expect(readPublicReason(error)).toBeUndefined();
    const pre = service(() => new ConnectError('reservation already released', Code.FailedPrecondition));
    expect((await failure(pre.admission.abort({}))).code).toBe(Code.FailedPrecondition);
  });

  it('another service on the same router is left alone', async () => {
    const s = service(() => new ConnectError('boom', Code.Internal));
    const error = await failure(s.admin.listCountries({}));
    expect(error.code).toBe(Code.Internal);
    expect(readPublicReason(error)).toBeUndefined();
  });
});
