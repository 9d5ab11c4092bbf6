import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../src/index.js';

describe('dnc argument parsing', () => {
  it('parses scrub with country, file, --out and a key, in any order', () => {
    expect(parseCommand(['scrub', '--country', 'co', 'numbers.json'])).toEqual({
      kind: 'scrub',
      country: 'co',
      file: 'numbers.json',
    });
    expect(parseCommand(['scrub', 'n.txt', '-c', 'MX', '-o', 'r.json', '--idempotency-key', 'k-1'])).toEqual({
      kind: 'scrub',
      country: 'mx',
      file: 'n.txt',
      out: 'r.json',
      idempotencyKey: 'k-1',
    });
    expect(parseCommand(['scrub', '--country=ar', '-'])).toEqual({ kind: 'scrub', country: 'ar', file: '-' });
  });

  it('parses jobs get|result|cancel', () => {
    expect(parseCommand(['jobs', 'get', 'abc'])).toEqual({ kind: 'jobs', action: 'get', id: 'abc' });
    expect(parseCommand(['jobs', 'result', 'abc', '--out', 'r.json'])).toEqual({
      kind: 'jobs',
      action: 'result',
      id: 'abc',
      out: 'r.json',
    });
    expect(parseCommand(['jobs', 'cancel', 'abc'])).toEqual({ kind: 'jobs', action: 'cancel', id: 'abc' });
  });

  it('answers help for no arguments, help and --help', () => {
    for (const argv of [[], ['help'], ['--help'], ['scrub', '-h']])
      expect(parseCommand(argv)).toEqual({ kind: 'help' });
  });

  it.each([
    [['scrub', 'n.json'], /needs --country/],
    [['scrub', '--country', 'us', 'n.json'], /unknown country 'us'/],
    [['scrub', '--country', 'co'], /exactly one input file/],
    [['scrub', '--country', 'co', 'a', 'b'], /exactly one input file/],
    [['scrub', '--country'], /argument missing/],
    [['scrub', '--colour', 'co', 'n.json'], /Unknown option '--colour'/],
    [['jobs', 'delete', 'abc'], /one of get, result, cancel/],
    [['jobs', 'get'], /exactly one job id/],
    [['jobs', 'get', 'a', 'b'], /exactly one job id/],
    [['jobs', 'get', 'a', '--out', 'x'], /takes no --out/],
    [['jobs', 'cancel', 'a', '--country', 'co'], /takes no --country/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });
});
