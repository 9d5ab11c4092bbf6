import { fstat } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
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

/** A file's identity, "-" standard input's; undefined when it cannot be had (the read reports it). */
async function identity(path: string): Promise<{ dev: number; ino: number; regular: boolean } | undefined> {
  try {
    const s = path === '-' ? await promisify(fstat)(0) : await stat(path);
    return { dev: s.dev, ino: s.ino, regular: s.isFile() };
  } catch {
    return undefined;
  }
}

/**
 * Whether the numbers (`input`) and the API key (`keyFile`) would be read from one stream: both "-", or one
 * "-" and the other a path to it (/dev/stdin, /proc/self/fd/0), or two paths to one pipe or terminal. Read
 * twice, a stream gives the first reader what it takes and the other the rest: the key line became an input
 * row (found by a review, 2026-12-05). A regular file can be read twice, each read whole.
 */
export async function keyAndInputShareAStream(input: string, keyFile: string | undefined): Promise<boolean> {
  if (keyFile === undefined) return false;
  if (input === '-' && keyFile === '-') return true;
  const [a, b] = await Promise.all([identity(input), identity(keyFile)]);
  return a !== undefined && b !== undefined && !a.regular && a.dev === b.dev && a.ino === b.ino;
}
