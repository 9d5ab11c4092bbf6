import { readFile } from 'node:fs/promises';

/** The input file cannot be used as it is. Messages name positions, never the numbers themselves. */
export class PhoneFileError extends Error {
  override readonly name = 'PhoneFileError';
}

/**
 * A JSON array of strings, or one number per line. Lines keep their exact text (the service parses spellings);
 * trailing blank lines are ignored, other blank lines are kept as inputs so positions and counts match the file.
 */
export function parsePhoneList(text: string): string[] {
  const content = text.replace(/^\uFEFF/, '');
  if (content.trimStart().startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      // The parser's message would quote the file: keep the numbers out of the terminal and logs.
      throw new PhoneFileError('the file starts with "[" but is not valid JSON');
    }
    if (!Array.isArray(value)) throw new PhoneFileError('the JSON must be an array of strings');
    value.forEach((item, index) => {
      if (typeof item !== 'string') {
        throw new PhoneFileError(`element ${index} of the JSON array is not a string (quote every number)`);
      }
    });
    if (value.length === 0) throw new PhoneFileError('the file holds no phone numbers');
    return value as string[];
  }
  const lines = content.split(/\r?\n/);
  while (lines.length > 0 && (lines[lines.length - 1] as string).trim() === '') lines.pop();
  if (lines.length === 0) throw new PhoneFileError('the file holds no phone numbers');
  return lines;
}

/** Reads a phone file; `-` reads standard input. */
export async function readPhoneFile(
  path: string,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string[]> {
  let text: string;
  if (path === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    text = Buffer.concat(chunks).toString('utf8');
  } else {
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new PhoneFileError(
        code === 'ENOENT' ? `no such file: ${path}` : `cannot read ${path} (${code ?? 'error'})`,
      );
    }
  }
  return parsePhoneList(text);
}
