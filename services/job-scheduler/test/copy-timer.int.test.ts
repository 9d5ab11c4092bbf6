import { boundedCopy, createPool } from '@dnc/kit';
import { to as copyTo } from 'pg-copy-streams';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../../test/support/stack.js';

// pg arms the pool's client read timer on a COPY stream, and a COPY TO stream never calls the callback
// that clears it: 20 s (QUERY_TIMEOUT_MS) after every result or input read, the timer failed a stream
// that had ended long before, on a connection serving another query by then. Here the bound is 150 ms.

const BOUND_MS = 150;
const pool = createPool(TEST_DATABASE_URL, 1, { queryTimeoutMs: BOUND_MS });
afterAll(() => pool.end());

/** COPY one row out, release the connection, wait past the bound: the errors the stream emitted. */
async function copyOneRow(bounded: boolean): Promise<{ text: string; errors: string[] }> {
  const client = await pool.connect();
  const copy = copyTo('COPY (SELECT 1) TO STDOUT');
  const stream = client.query(bounded ? boundedCopy(copy, BOUND_MS) : copy);
  const errors: string[] = [];
  stream.on('error', (e: Error) => errors.push(e.message));
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  client.release();
  await new Promise((r) => setTimeout(r, BOUND_MS * 2));
  // The connection still answers.
  expect((await pool.query('SELECT 2 AS two')).rows[0].two).toBe(2);
  return { text: Buffer.concat(chunks).toString(), errors };
}

describe('a finished COPY TO leaves no client read timer behind', () => {
  it('the driver alone: the timer fails the stream after it ended (what boundedCopy is for)', async () => {
    expect(await copyOneRow(false)).toEqual({ text: '1\n', errors: ['Query read timeout'] });
  });

  it('boundedCopy: the timer is cleared when the stream ends', async () => {
    expect(await copyOneRow(true)).toEqual({ text: '1\n', errors: [] });
  });
});
