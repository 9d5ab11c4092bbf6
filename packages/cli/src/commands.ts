import { randomUUID } from 'node:crypto';
import { type DncClient, DncJobError, LIMITS, type ResponseInfo, type ScrubResult } from '@dnc-scrub/sdk';
import type { JobsCommand, OutputFormat, ScrubCommand } from './args.js';
import { type PhoneInput, readInput } from './input.js';
import { answeredBoth, outcomesByPosition } from './outcome.js';
import { type Sink, toDestination, writeJson, writeRows } from './output.js';
import type { Progress } from './progress.js';

export interface CommandContext {
  client: DncClient;
  stdout: Sink;
  stderr: { write(text: string): unknown };
  progress: Progress;
  signal: AbortSignal | undefined;
  /** What an input of "-" reads. */
  stdin: NodeJS.ReadableStream;
  /** Set as soon as a job exists, so an interruption can say how to follow it. */
  onJob(id: string): void;
  /** The job succeeded: an error from here on is recovered by `jobs result`, not `jobs wait`. */
  onJobSucceeded(id: string): void;
  /** The Idempotency-Key of the request about to be sent, so an interruption can say how to retry it. */
  onSubmit(idempotencyKey: string): void;
}

const withSignal = (ctx: CommandContext) => (ctx.signal ? { signal: ctx.signal } : {});

/**
 * A number the result has both prohibited and safe (the registry changed while a v2 job ran) is not to be
 * called: its rows say prohibited; the JSON document is the service's, written as it is, and lists it in both.
 */
function warnAnsweredBoth(ctx: CommandContext, count: number, rows: boolean): void {
  if (count === 0) return;
  const shown = rows ? '; their rows say prohibited' : '';
  ctx.stderr.write(
    `dnc: warning: ${count} number(s) of the result are both prohibited and safe (the registry changed while the job ran): do not call them${shown}\n`,
  );
}

/** Writes the result: the ScrubResult document, or one row per input joined to the input file. */
async function emitResult(
  ctx: CommandContext,
  result: ScrubResult,
  format: OutputFormat,
  input: PhoneInput | undefined,
  out: string | undefined,
): Promise<void> {
  if (format === 'json' || input === undefined) {
    warnAnsweredBoth(ctx, answeredBoth(result), false);
    await toDestination(ctx.stdout, out, (sink) => writeJson(sink, result));
    return;
  }
  const outcomes = outcomesByPosition(input.phones, result);
  warnAnsweredBoth(ctx, outcomes.answeredBoth, true);
  await toDestination(ctx.stdout, out, (sink) => writeRows(sink, format, input, outcomes), input.path);
}

async function waitForSuccess(ctx: CommandContext, id: string) {
  const done = await ctx.client.jobs.wait(id, {
    ...withSignal(ctx),
    onProgress: (status) => ctx.progress.update(`job ${status.job_id} ${status.status}`),
  });
  if (done.status !== 'succeeded') throw new DncJobError(done);
  return done;
}

export async function scrub(ctx: CommandContext, command: ScrubCommand): Promise<number> {
  const input = await readInput(command.file, command.table, ctx);
  const { phones } = input;
  const request = { country: command.country, phones };
  // Made here when not given (not by the SDK), so that it is known whatever ends the request, Ctrl-C too.
  const keyed = { idempotencyKey: command.idempotencyKey ?? randomUUID() };
  ctx.onSubmit(keyed.idempotencyKey);
  let last: ResponseInfo | undefined;
  const onResponse = (info: ResponseInfo) => {
    last = info;
  };

  if (command.detach) {
    ctx.progress.start(`submitting ${phones.length} numbers`);
    const job = await ctx.client.jobs.create(request, { ...keyed, ...withSignal(ctx) });
    ctx.progress.stop();
    ctx.stdout.write(`${job.job_id}\n`);
    // An exact retry of a key whose job already ended answers that job: one that failed, expired or was
    // cancelled is this run's failure (exit 1), as `jobs wait` says (found by a review, 2026-12-05).
    if (job.status === 'failed' || job.status === 'expired' || job.status === 'cancelled')
      throw new DncJobError(job);
    ctx.stderr.write(`dnc: job ${job.job_id} ${job.status}; follow it with: dnc jobs wait ${job.job_id}\n`);
    return 0;
  }

  let result: ScrubResult;
  if (phones.length <= LIMITS.v1MaxInputs) {
    ctx.progress.start(`checking ${phones.length} numbers`);
    result = await ctx.client.scrub(request, { ...keyed, ...withSignal(ctx), onResponse });
  } else {
    ctx.progress.start(`submitting ${phones.length} numbers`);
    const job = await ctx.client.jobs.create(request, { ...keyed, ...withSignal(ctx) });
    ctx.onJob(job.job_id);
    await waitForSuccess(ctx, job.job_id);
    ctx.onJobSucceeded(job.job_id);
    result = await ctx.client.jobs.result(job.job_id, { ...withSignal(ctx), onResponse });
  }
  ctx.progress.stop();
  try {
    await emitResult(ctx, result, command.format ?? (input.table ? 'csv' : 'json'), input, command.out);
  } catch (error) {
    // The answer came, and was charged, but was not written (a full disk, a missing directory): the same
    // key gets it again free (v1 replays it, v2 answers the same job). Found by a review (2026-12-05): the key,
    // generated here, was never shown, so running the command again was a second charge.
    ctx.stderr.write(
      `dnc: the answer was received but not written; once the cause is fixed, the same command (the same numbers) with --idempotency-key ${keyed.idempotencyKey} gets it again without a second charge\n`,
    );
    throw error;
  }
  reportAnswer(ctx, last);
  return 0;
}

/** What the answer says about itself, on stderr (stdout carries only the result). */
function reportAnswer(ctx: CommandContext, info: ResponseInfo | undefined): void {
  if (info?.requestId) ctx.stderr.write(`dnc: request id ${info.requestId}\n`);
  // Evidence of freshness: when the registry snapshot the answer was read from was taken.
  const snapshot = info?.headers.get('x-registry-snapshot-at');
  if (snapshot) ctx.stderr.write(`dnc: registry snapshot of ${snapshot}\n`);
  // Deprecation (RFC 9745) and Sunset (RFC 8594): the terms are in the deprecation guide.
  const sunset = info?.headers.get('sunset');
  if (info?.headers.has('deprecation') || sunset) {
    ctx.stderr.write(
      `dnc: warning: this API version is deprecated${sunset ? `; it is retired after ${sunset}` : ''} (see the deprecation guide)\n`,
    );
  }
}

export async function jobs(ctx: CommandContext, command: JobsCommand): Promise<number> {
  const options = withSignal(ctx);
  switch (command.action) {
    case 'get':
      await writeJson(ctx.stdout, await ctx.client.jobs.get(command.id, options));
      return 0;
    case 'cancel':
      await writeJson(ctx.stdout, await ctx.client.jobs.cancel(command.id, options));
      return 0;
    case 'wait': {
      ctx.progress.start(`job ${command.id}`);
      const done = await ctx.client.jobs.wait(command.id, {
        ...options,
        onProgress: (status) => ctx.progress.update(`job ${status.job_id} ${status.status}`),
      });
      ctx.progress.stop();
      await writeJson(ctx.stdout, done);
      if (done.status !== 'succeeded') throw new DncJobError(done);
      return 0;
    }
    case 'result': {
      // Read (and check) the input file before asking for the result, so a bad file costs no call.
      const input =
        command.input === undefined ? undefined : await readInput(command.input, command.table ?? {}, ctx);
      let last: ResponseInfo | undefined;
      const result = await ctx.client.jobs.result(command.id, {
        ...options,
        onResponse: (info) => {
          last = info;
        },
      });
      await emitResult(ctx, result, command.format ?? (input?.table ? 'csv' : 'json'), input, command.out);
      reportAnswer(ctx, last);
      return 0;
    }
  }
}
