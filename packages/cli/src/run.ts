import { readFileSync } from 'node:fs';
import {
  API_VERSION,
  DncApiError,
  DncClient,
  DncConnectionError,
  DncJobError,
  DncTimeoutError,
  DncWaitTimeoutError,
  isRetryableAnswer,
} from '@dnc-scrub/sdk';
import { type Command, parseCommand, resultCommand, UsageError } from './args.js';
import { jobs, scrub } from './commands.js';
import { HELP } from './help.js';
import { ApiKeyError, apiKeyFrom, keyAndInputShareAStream } from './key.js';
import { ResultMismatchError } from './outcome.js';
import type { Sink } from './output.js';
import { Progress, type ProgressStream } from './progress.js';
import { InputFileError } from './table.js';

export interface CliEnvironment {
  stdout: Sink;
  stderr: ProgressStream;
  stdin?: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
  /** Aborts a running command (Ctrl-C). */
  signal?: AbortSignal;
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

export const CLI_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** Runs one `dnc` invocation and returns its exit status: 0 done, 1 the service or job failed, 2 usage or input, 130 interrupted. */
export async function runCli(argv: readonly string[], io: CliEnvironment): Promise<number> {
  const fail = (code: string, message: string, status: number) => {
    io.stderr.write(`dnc: error ${code}: ${message}\n`);
    return status;
  };
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (error) {
    if (error instanceof UsageError) return fail('usage', `${error.message}\n\n${HELP[error.topic]}`, 2);
    throw error;
  }
  if (command.kind === 'help') {
    io.stdout.write(`${HELP[command.topic]}\n`);
    return 0;
  }
  if (command.kind === 'version') {
    io.stdout.write(`dnc ${CLI_VERSION} (API ${API_VERSION})\n`);
    return 0;
  }
  const input = command.kind === 'scrub' ? command.file : command.input;
  if (input !== undefined && (await keyAndInputShareAStream(input, command.apiKeyFile))) {
    return fail('usage', 'the numbers and the API key cannot both come from standard input', 2);
  }

  const baseUrl = command.baseUrl ?? (io.env['DNC_BASE_URL'] || DEFAULT_BASE_URL);
  const progress = new Progress(io.stderr);
  let jobId: string | undefined;
  let succeeded = false;
  let submitted: string | undefined;
  try {
    const apiKey = await apiKeyFrom(command, io.env, io.stdin);
    const client = newClient(apiKey, baseUrl, io.env);
    if (typeof client === 'string') return fail('usage', client, 2);
    const ctx = {
      client,
      // Read by an input of "-": whole, into memory, never copied to a file.
      stdin: io.stdin ?? process.stdin,
      stdout: io.stdout,
      stderr: io.stderr,
      progress,
      signal: io.signal,
      onJob: (id: string) => {
        jobId = id;
      },
      onJobSucceeded: () => {
        succeeded = true;
      },
      onSubmit: (key: string) => {
        submitted = key;
      },
    };
    if (command.kind === 'scrub') return await scrub(ctx, command);
    return await jobs(ctx, command);
  } catch (error) {
    progress.stop();
    const aborted = io.signal?.aborted === true;
    const recover = succeeded && jobId !== undefined ? recoverHint(command, jobId) : undefined;
    const status = report(error, fail, { baseUrl, jobId, recover, aborted });
    for (const hint of afterError(error, aborted ? undefined : jobId, recover))
      io.stderr.write(`dnc: ${hint}\n`);
    // Interrupted with the request sent and no job known: the service may have answered (and charged)
    // after all; the same key gets that answer, never a second charge or a second job.
    if (aborted && submitted && !jobId) io.stderr.write(`dnc: ${retryHint(submitted)}\n`);
    return status;
  }
}

/**
 * The SDK's client, or why it cannot be made (nothing sent): an API key it refuses, a base URL that is not
 * http(s), or http:// to another machine without DNC_ALLOW_INSECURE_HTTP=1 (the key would travel in clear).
 */
function newClient(apiKey: string, baseUrl: string, env: NodeJS.ProcessEnv): DncClient | string {
  try {
    return new DncClient({ apiKey, baseUrl, allowInsecureHttp: env['DNC_ALLOW_INSECURE_HTTP'] === '1' });
  } catch (error) {
    if (error instanceof TypeError) return error.message;
    throw error;
  }
}

/**
 * How to get the rows of a job that succeeded before an error (its result download failed, or its output
 * could not be written): its result is kept (7 days), and `jobs result` with the same input writes them
 * without a second charge. The hint named `jobs wait`, which only prints the job (found by a review,
 * 2026-12-05).
 */
function recoverHint(command: Command, id: string): string | undefined {
  if (command.kind !== 'scrub') return undefined;
  const stdin = command.file === '-' ? ', the same numbers on standard input' : '';
  return `job ${id} succeeded; get its result (kept 7 days, no second charge) with: ${resultCommand(command, id)}${stdin}`;
}

/**
 * What to do next after an error: a request whose outcome is unknown (no answer) or that may be retried
 * (in progress, rate limited, unavailable) is run again with the same Idempotency-Key, which the user may
 * not know (generated): the first request's answer, or its job, and never a second charge. A job admitted
 * before the error keeps running; one that succeeded is recovered as `recover` says.
 */
function afterError(error: unknown, jobId: string | undefined, recover: string | undefined): string[] {
  const hints: string[] = [];
  const unknown = error instanceof DncConnectionError || error instanceof DncTimeoutError;
  const retryable =
    error instanceof DncApiError && (isRetryableAnswer(error.status, error.code) || error.status >= 500);
  const key = unknown || retryable ? error.idempotencyKey : undefined;
  if (key && !jobId) hints.push(retryHint(key));
  if (jobId && !(error instanceof DncJobError)) {
    hints.push(
      recover ?? `job ${jobId} was admitted and may still run; follow it with: dnc jobs wait ${jobId}`,
    );
  }
  return hints;
}

function retryHint(key: string): string {
  return `to retry, run the same command with --idempotency-key ${key} (the first request's answer, never a second charge)`;
}

function withId(message: string, requestId: string | undefined): string {
  return requestId ? `${message} (request id ${requestId})` : message;
}

function report(
  error: unknown,
  fail: (code: string, message: string, status: number) => number,
  context: { baseUrl: string; jobId: string | undefined; recover: string | undefined; aborted: boolean },
): number {
  if (error instanceof DncApiError) return fail(error.code, withId(error.message, error.requestId), 1);
  if (error instanceof DncJobError) {
    return fail(error.code, `job ${error.job.job_id} ended ${error.job.status}; no result`, 1);
  }
  if (error instanceof DncWaitTimeoutError) return fail(error.code, error.message, 1);
  if (error instanceof DncTimeoutError) return fail(error.code, withId(error.message, error.requestId), 1);
  if (error instanceof DncConnectionError) {
    return fail(error.code, withId(`could not reach ${context.baseUrl}`, error.requestId), 1);
  }
  if (error instanceof InputFileError) return fail('invalid_input_file', error.message, 2);
  if (error instanceof ApiKeyError) return fail('missing_api_key', error.message, 2);
  if (error instanceof ResultMismatchError) return fail('result_mismatch', error.message, 1);
  if (context.aborted) {
    const wait = context.jobId ? `; job ${context.jobId} keeps running: dnc jobs wait ${context.jobId}` : '';
    return fail('interrupted', `stopped waiting${context.recover ? `; ${context.recover}` : wait}`, 130);
  }
  const message = error instanceof Error ? error.message : String(error);
  return fail('unexpected', message, 1);
}
