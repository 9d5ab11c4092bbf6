import { OUTCOME_REASONS } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';

const { Outcome } = registryv1;

// The same reason map as v1 (kit's OUTCOME_REASONS), so v1 and v2 classify every input alike.
const INVALID_REASON = OUTCOME_REASONS;

/** An outcome the result can be built from; anything else makes the answer inconclusive. */
export function isConclusive(outcome: registryv1.Outcome): boolean {
  return outcome === Outcome.SAFE || outcome === Outcome.PROHIBITED || INVALID_REASON.has(outcome);
}

export interface ResultSummary {
  total_checked: number;
  prohibited_numbers: number;
  safe_numbers: number;
  invalid_numbers: number;
}

/**
 * One unit's items in one list: pieces of items joined by commas, without the list's brackets, in UTF-8.
 * Held as bytes outside V8's heap: the heap a job holds stays its phones (worker/memory.ts), which the
 * pieces replace as units are released; the bytes are the result's, at most its 25 MiB.
 */
type ListPieces = Buffer[];

interface RenderedUnit {
  count: number;
  prohibited: ListPieces;
  safe: ListPieces;
  invalid: ListPieces;
}

const LISTS = [
  ['{"prohibited_numbers_to_call":[', 'prohibited'],
  ['],"safe_numbers_to_call":[', 'safe'],
  ['],"invalid_numbers":[', 'invalid'],
] as const;

/**
 * The ScrubResult JSON document (same model as v1), rendered unit by unit as each unit's answers come
 * back, and read back as consecutive text pieces in document order once every input is answered. A
 * job's units are answered by the adapter one after another while the worker waits: each is rendered
 * then (its three lists' items), so what is left when the last unit answers is that unit's share, not
 * the whole document (500,000 inputs: ~55 ms of rendering, warm, taken off the job's path).
 *
 * Original inputs in input order; duplicates kept; invalid entries carry their reason. Every outcome
 * must be conclusive (checked by the caller before; an inconclusive one throws here). Each list's items
 * are cut into pieces of about `pieceChars` characters of inputs, so a 500,000-input result is sealed
 * segment by segment instead of being built as one string.
 *
 * The items of a piece are one `JSON.stringify` of an array, its brackets dropped: V8 serializes a whole
 * array natively, where one call and one concatenation per input cost about twice as much (500,000 inputs
 * rendered and encoded to UTF-8 in 150-194 ms that way, 86-111 ms this way). The text is the same, byte
 * for byte, however the inputs are cut into units and in whatever order the units are answered.
 */
export class ResultBuilder {
  private readonly units = new Map<number, RenderedUnit>();
  private answered = 0;
  private prohibited = 0;
  private safe = 0;
  private invalid = 0;

  constructor(
    readonly total: number,
    private readonly pieceChars = 1 << 20,
  ) {}

  /** The answers of inputs [from, from + phones.length), rendered now. */
  add(from: number, phones: readonly string[], outcomes: ArrayLike<registryv1.Outcome>): void {
    if (phones.length !== outcomes.length) throw new Error('outcome count differs from input count');
    if (this.units.has(from) || from < 0 || from + phones.length > this.total)
      throw new Error('unit outside the input or answered twice');
    let prohibited = 0;
    let safe = 0;
    let invalid = 0;
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      if (o === Outcome.PROHIBITED) prohibited++;
      else if (o === Outcome.SAFE) safe++;
      else if (INVALID_REASON.has(o)) invalid++;
      else throw new Error('inconclusive outcome');
    }
    const phoneIf = (pick: registryv1.Outcome) => (i: number) =>
      outcomes[i] === pick ? phones[i] : undefined;
    this.units.set(from, {
      count: phones.length,
      prohibited: prohibited > 0 ? this.pieces(phones, phoneIf(Outcome.PROHIBITED)) : [],
      safe: safe > 0 ? this.pieces(phones, phoneIf(Outcome.SAFE)) : [],
      invalid:
        invalid > 0
          ? this.pieces(phones, (i) => {
              const reason = INVALID_REASON.get(outcomes[i]!);
              return reason === undefined ? undefined : { input: phones[i] as string, reason };
            })
          : [],
    });
    this.answered += phones.length;
    this.prohibited += prohibited;
    this.safe += safe;
    this.invalid += invalid;
  }

  /** The document in order, text and bytes; every input must have been answered, each exactly once. */
  *document(): Generator<string | Buffer, ResultSummary> {
    const starts = [...this.units.keys()].sort((a, b) => a - b);
    let next = 0;
    for (const from of starts) {
      if (from !== next) break;
      next += (this.units.get(from) as RenderedUnit).count;
    }
    if (this.answered !== this.total || next !== this.total)
      throw new Error('outcome count differs from input count');
    for (const [open, key] of LISTS) {
      let head: string = open;
      for (const from of starts) {
        for (const piece of (this.units.get(from) as RenderedUnit)[key]) {
          yield head;
          yield piece;
          head = ',';
        }
      }
      if (head === open) yield open;
    }
    const summary: ResultSummary = {
      total_checked: this.total,
      prohibited_numbers: this.prohibited,
      safe_numbers: this.safe,
      invalid_numbers: this.invalid,
    };
    yield `],"summary":${JSON.stringify(summary)}}`;
    return summary;
  }

  /** One list's items of a unit (`item(i)` undefined: input i is not in it), about `pieceChars` at a time. */
  private pieces<T>(phones: readonly string[], item: (i: number) => T | undefined): ListPieces {
    const pieces: ListPieces = [];
    let chunk: T[] = [];
    let chars = 0;
    for (let i = 0; i < phones.length; i++) {
      const it = item(i);
      if (it === undefined) continue;
      chunk.push(it);
      chars += (phones[i] as string).length + 3;
      if (chars >= this.pieceChars) {
        pieces.push(Buffer.from(JSON.stringify(chunk).slice(1, -1), 'utf8'));
        chunk = [];
        chars = 0;
      }
    }
    if (chunk.length > 0) pieces.push(Buffer.from(JSON.stringify(chunk).slice(1, -1), 'utf8'));
    return pieces;
  }
}
