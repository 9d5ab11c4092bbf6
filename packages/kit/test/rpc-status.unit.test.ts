import { create } from '@bufbuild/protobuf';
import { ERROR_CODE_NAMES } from '@dnc/api-contract/error-codes';
import { admissionv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import {
  Code,
  ConnectError,
  errorOfRpcStatus,
  findDetail,
  publicError,
  readPublicReason,
  rpcStatusOf,
} from '../src/errors.js';

describe('RpcStatus: an item error of a batch answer', () => {
  it('carries code, message, public reason and typed details through the round trip', () => {
    const rate = create(admissionv1.RateLimitInfoSchema, {
      limit: 60,
      remaining: 0,
      resetUnix: 1_800_000_000n,
    });
    const original = publicError(Code.ResourceExhausted, 'rate_limit_exceeded', {
      message: 'Rate limit exceeded; retry after the window resets.',
      retryAfterSeconds: 7,
      details: [{ desc: admissionv1.RateLimitInfoSchema, value: rate }],
    });
    const back = errorOfRpcStatus(rpcStatusOf(original));
    expect(back.code).toBe(Code.ResourceExhausted);
    expect(back.rawMessage).toBe(original.rawMessage);
    expect(readPublicReason(back)).toEqual(readPublicReason(original));
    expect(findDetail(back, admissionv1.RateLimitInfoSchema)).toMatchObject({ limit: 60, remaining: 0 });
    // Details that arrived over the wire (incoming) pass again unchanged.
    const twice = errorOfRpcStatus(rpcStatusOf(back));
    expect(readPublicReason(twice)).toEqual(readPublicReason(original));
  });

  it('an error without a public reason stays one; an unknown code reads as Unknown', () => {
    const back = errorOfRpcStatus(
      rpcStatusOf(new ConnectError('no such admission', Code.FailedPrecondition)),
    );
    expect([back.code, readPublicReason(back)]).toEqual([Code.FailedPrecondition, undefined]);
    expect(errorOfRpcStatus(rpcStatusOf(new Error('boom'))).code).toBe(Code.Unknown);
    const bogus = rpcStatusOf(new ConnectError('x', Code.Internal));
    bogus.code = 99;
    expect(errorOfRpcStatus(bogus).code).toBe(Code.Unknown);
  });
});

describe('publicError reasons are the contract vocabulary (typed, not strings)', () => {
  it('takes every public error code; a misspelled reason fails the type-check (npm run typecheck)', () => {
    for (const code of ERROR_CODE_NAMES)
      expect(readPublicReason(publicError(Code.Unknown, code))?.reason).toBe(code);
    // @ts-expect-error 'platfrom_failure' is not a reason: tsc refuses it instead of a 503 at run time.
    expect(readPublicReason(publicError(Code.Unavailable, 'platfrom_failure'))?.reason).toBe(
      'platfrom_failure',
    );
  });
});
