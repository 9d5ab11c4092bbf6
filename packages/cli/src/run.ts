import { writeFile } from 'node:fs/promises';
import { LIMITS } from '@dnc/api-contract/limits';
import { DncApiError, DncClient, DncConnectionError, DncJobError, DncWaitTimeoutError } from '@dnc/sdk';
import { type Command, parseCommand, USAGE, UsageError } from './args.js';
import { PhoneFileError, readPhoneFile } from './phone-file.js';
import { Progress, type ProgressStream } from './progress.js';

export interface CliEnvironment {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
  stdin?: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
  /** Aborts a running command (Ctrl-C). */
  signal?: AbortSignal;
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

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
    if (error instanceof UsageError) return fail('usage', `${error.message}\n\n${USAGE}`, 2);
    throw error;
  }
  if (command.kind === 'help') {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }

  const apiKey = io.env['DNC_API_KEY'];
  if (!apiKey) return fail('missing_api_key', 'set DNC_API_KEY to your API key', 2);
  const baseUrl = io.env['DNC_BASE_URL'] || DEFAULT_BASE_URL;
  const client = new DncClient({ apiKey, baseUrl });
  const progress = new Progress(io.stderr);
  let jobId: string | undefined;

  try {
    if (command.kind === 'scrub') {
      const phones = await readPhoneFile(command.file, io.stdin);
      if (phones.length > LIMITS.v2MaxInputs) {
        return fail(
          'too_many_numbers',
          `the file holds ${phones.length} numbers; at most ${LIMITS.v2MaxInputs} per job`,
          2,
        );
      }
      const request = { country: command.country, phones };
      const keyed = command.idempotencyKey === undefined ? {} : { idempotencyKey: command.idempotencyKey };
      let result: unknown;
      if (phones.length <= LIMITS.v1MaxInputs) {
        progress.start(`checking ${phones.length} numbers`);
        result = await client.scrub(request, { ...keyed, ...(io.signal ? { signal: io.signal } : {}) });
      } else {
        progress.start(`submitting ${phones.length} numbers`);
        const job = await client.jobs.create(request, {
          ...keyed,
          ...(io.signal ? { signal: io.signal } : {}),
        });
        jobId = job.job_id;
        const done = await client.jobs.wait(job.job_id, {
          ...(io.signal ? { signal: io.signal } : {}),
          onProgress: (status) => progress.update(`job ${status.job_id} ${status.status}`),
        });
        if (done.status !== 'succeeded') throw new DncJobError(done);
        result = await client.jobs.result(done.job_id, io.signal ? { signal: io.signal } : {});
      }
      progress.stop();
      await emit(io, result, command.out);
      return 0;
    }

    const options = io.signal ? { signal: io.signal } : {};
    if (command.action === 'result') {
      await emit(io, await client.jobs.result(command.id, options), command.out);
    } else if (command.action === 'get') {
      await emit(io, await client.jobs.get(command.id, options), undefined);
    } else {
      await emit(io, await client.jobs.cancel(command.id, options), undefined);
    }
    return 0;
  } catch (error) {
    progress.stop();
    if (error instanceof DncApiError) return fail(error.code, error.message, 1);
    if (error instanceof DncJobError) {
      return fail(error.code, `job ${error.job.job_id} ended ${error.job.status}; no result`, 1);
    }
    if (error instanceof DncWaitTimeoutError) return fail(error.code, error.message, 1);
    if (error instanceof DncConnectionError) return fail(error.code, `could not reach ${baseUrl}`, 1);
    if (error instanceof PhoneFileError) return fail('invalid_input_file', error.message, 2);
    if (io.signal?.aborted) {
      const hint = jobId ? `; job ${jobId} keeps running: dnc jobs get ${jobId}` : '';
      return fail('interrupted', `stopped waiting${hint}`, 130);
    }
    const message = error instanceof Error ? error.message : String(error);
    return fail('unexpected', message, 1);
  }
}

async function emit(io: CliEnvironment, value: unknown, out: string | undefined): Promise<void> {
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (out === undefined) io.stdout.write(text);
  // Results hold phone numbers: readable by the owner only when the file is created.
  else await writeFile(out, text, { mode: 0o600 });
}
