import { readFile } from 'node:fs/promises';
import type { Connection } from './args.js';

/** The API key could not be had: exit status 2, nothing sent. */
export class ApiKeyError extends Error {
  override readonly name = 'ApiKeyError';
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The API key from --api-key-file (a file, or "-" for standard input: first line), else from DNC_API_KEY.
 * A key never appears on the command line, where other users of the machine could read it in the process list.
 */
export async function apiKeyFrom(
  connection: Connection,
  env: Record<string, string | undefined>,
  stdin: NodeJS.ReadableStream | undefined,
): Promise<string> {
  const file = connection.apiKeyFile;
  if (file === undefined) {
    const key = env['DNC_API_KEY'];
    if (!key) throw new ApiKeyError('set DNC_API_KEY to your API key, or use --api-key-file FILE');
    return key;
  }
  let text: string;
  try {
    text = file === '-' ? await readAll(stdin ?? process.stdin) : await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ApiKeyError(`cannot read the API key file ${file} (${code})`);
  }
  const key = (text.split(/\r?\n/, 1)[0] ?? '').trim();
  if (!key) throw new ApiKeyError(`the API key file ${file} is empty`);
  return key;
}
