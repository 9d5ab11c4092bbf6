import { describe, expect, it } from 'vitest';
import { admissionGate, CHECK_ORDER, type GateFacts } from '../src/domain/check-order.js';

const NOW = Date.parse('2026-11-22T00:00:00Z');

function facts(over: Partial<GateFacts> = {}): GateFacts {
  return {
    country: 'mx',
    organization: { suspended: false, activationComplete: true },
    purchase: { status: 'active', activated: true },
    maintenanceUntilMs: undefined,
    adapters: [{ status: 'serving' }],
    nowMs: NOW,
    ...over,
  };
}

describe('the one check order (issue 3 item 9)', () => {
  it('is auth 401 -> abuse/rate 429 -> body 400/413 -> org 403 -> purchase 402/403 -> 503 -> 409 -> quota 429', () => {
    expect(CHECK_ORDER).toEqual([
      'address_block',
      'authentication',
      'abuse_guard',
      'rate_limit',
      'request_validation',
      'organization',
      'purchase',
      'availability',
      'idempotency',
      'quota',
    ]);
  });

  it('admits when every fact is good', () => {
    expect(admissionGate(facts())).toBeUndefined();
  });

  it('organization first: suspended beats every later failure', () => {
    const r = admissionGate(
      facts({
        organization: { suspended: true, activationComplete: false },
        purchase: undefined,
        adapters: [],
        maintenanceUntilMs: NOW + 1000,
      }),
    );
    expect(r).toMatchObject({ step: 'organization', reason: 'account_suspended' });
  });

  it('activation incomplete -> 403 activation_incomplete before purchase', () => {
    const r = admissionGate(
      facts({ organization: { suspended: false, activationComplete: false }, purchase: undefined }),
    );
    expect(r).toMatchObject({ step: 'organization', reason: 'activation_incomplete' });
  });

  it('no purchase -> country_not_in_plan; technical codes are never in a plan', () => {
    expect(admissionGate(facts({ purchase: undefined }))).toMatchObject({ reason: 'country_not_in_plan' });
    for (const country of ['es', 'au', 'sg'] as const) {
      expect(admissionGate(facts({ country }))).toMatchObject({
        step: 'purchase',
        reason: 'country_not_in_plan',
      });
    }
  });

  it('lapsed or unpaid purchase -> 402 subscription_inactive, before availability', () => {
    for (const status of ['lapsed', 'pending_payment'] as const) {
      const r = admissionGate(facts({ purchase: { status, activated: true }, adapters: [] }));
      expect(r).toMatchObject({ step: 'purchase', reason: 'subscription_inactive' });
    }
  });

  it('paid but not activated (mx, ar) -> 503 country_service_temporarily_unavailable', () => {
    const r = admissionGate(facts({ purchase: { status: 'active', activated: false } }));
    expect(r).toMatchObject({ step: 'availability', reason: 'country_service_temporarily_unavailable' });
  });

  it('operator maintenance -> 503 country_service_maintenance with Retry-After = seconds to its end', () => {
    const r = admissionGate(facts({ maintenanceUntilMs: NOW + 90_500 }));
    expect(r).toMatchObject({ reason: 'country_service_maintenance', retryAfterSeconds: 91 });
    expect(admissionGate(facts({ maintenanceUntilMs: NOW - 1 }))).toBeUndefined();
  });

  it('no adapter discovered, or none serving -> temporarily unavailable; adapter maintenance -> maintenance', () => {
    expect(admissionGate(facts({ adapters: [] }))).toMatchObject({
      reason: 'country_service_temporarily_unavailable',
    });
    expect(admissionGate(facts({ adapters: [{ status: 'unavailable' }] }))).toMatchObject({
      reason: 'country_service_temporarily_unavailable',
    });
    expect(
      admissionGate(facts({ adapters: [{ status: 'maintenance', maintenanceUntilMs: NOW + 30_000 }] })),
    ).toMatchObject({ reason: 'country_service_maintenance', retryAfterSeconds: 30 });
    expect(
      admissionGate(facts({ adapters: [{ status: 'unavailable' }, { status: 'serving' }] })),
    ).toBeUndefined();
  });
});
