// The regular-expression subset of libphonenumber's metadata (digits, \d, classes, groups, alternation,
// ?, *, +, {n}, {n,m}; anything else stops with an error), the finite languages among them enumerated in
// a backtracking engine's order, and the minimal DFA of a set of patterns. Used by generate-numbering.mjs.

// ---------------------------------------------------------------- regular expression subset parser

const digitSet = (from, to) => {
  let m = 0;
  for (let d = from; d <= to; d++) m |= 1 << d;
  return m;
};

/** A recursive-descent parser of the subset, one method per level of the grammar. */
class RegexParser {
  pos = 0;
  groupCount = 0;

  constructor(src) {
    this.src = src;
  }

  fail(msg) {
    throw new Error(`unsupported regex ${JSON.stringify(this.src)} at ${this.pos}: ${msg}`);
  }

  alt() {
    const items = [this.seq()];
    while (this.src[this.pos] === '|') {
      this.pos++;
      items.push(this.seq());
    }
    return items.length === 1 ? items[0] : { t: 'alt', items };
  }

  seq() {
    const { src } = this;
    const items = [];
    while (this.pos < src.length && src[this.pos] !== '|' && src[this.pos] !== ')')
      items.push(this.quantified());
    return { t: 'seq', items };
  }

  quantified() {
    const { src } = this;
    let node = this.atom();
    for (;;) {
      const c = src[this.pos];
      let min;
      let max;
      if (c === '?') [min, max] = [0, 1];
      else if (c === '*') [min, max] = [0, Number.POSITIVE_INFINITY];
      else if (c === '+') [min, max] = [1, Number.POSITIVE_INFINITY];
      else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(this.pos));
        if (!m) this.fail('bad quantifier');
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === '' ? Number.POSITIVE_INFINITY : Number(m[3]);
        this.pos += m[0].length - 1;
      } else return node;
      this.pos++;
      if (src[this.pos] === '?') this.fail('lazy quantifier');
      node = { t: 'rep', min, max, body: node };
    }
  }

  atom() {
    const { src } = this;
    const c = src[this.pos];
    if (c === '(') return this.group();
    if (c === '[') return this.digitClass();
    if (src.startsWith('\\d', this.pos)) {
      this.pos += 2;
      return { t: 'set', mask: digitSet(0, 9) };
    }
    if (/[0-9]/.test(c)) {
      this.pos++;
      return { t: 'set', mask: 1 << Number(c) };
    }
    this.fail(`character ${JSON.stringify(c)}`);
  }

  group() {
    const { src } = this;
    this.pos++;
    let capture = true;
    if (src.startsWith('?:', this.pos)) {
      capture = false;
      this.pos += 2;
    } else if (src[this.pos] === '?') this.fail('group kind');
    const index = capture ? ++this.groupCount : 0;
    const body = this.alt();
    if (src[this.pos] !== ')') this.fail('unclosed group');
    this.pos++;
    return { t: 'group', capture, index, body };
  }

  digitClass() {
    const { src } = this;
    this.pos++;
    let mask = 0;
    if (src[this.pos] === '^') this.fail('negated class');
    while (src[this.pos] !== ']') {
      if (this.pos >= src.length) this.fail('unclosed class');
      if (src.startsWith('\\d', this.pos)) {
        mask |= digitSet(0, 9);
        this.pos += 2;
        continue;
      }
      const lo = src[this.pos];
      if (!/[0-9]/.test(lo)) this.fail('non-digit in class');
      this.pos++;
      if (src[this.pos] === '-' && src[this.pos + 1] !== ']') {
        const hi = src[this.pos + 1];
        if (!/[0-9]/.test(hi)) this.fail('non-digit range');
        mask |= digitSet(Number(lo), Number(hi));
        this.pos += 2;
      } else mask |= 1 << Number(lo);
    }
    this.pos++;
    return { t: 'set', mask };
  }
}

export function parseRegex(src) {
  const parser = new RegexParser(src);
  const ast = parser.alt();
  if (parser.pos !== src.length) parser.fail('trailing input');
  return { ast, groupCount: parser.groupCount };
}

// ---------------------------------------------------------------- finite language in regex priority order

// Returns [{ s, groups: Map<index, string> }] in the order a backtracking engine tries the paths.
export function enumerate(node, limit = 200_000) {
  const cat = (a, b) => {
    const out = [];
    for (const x of a)
      for (const y of b) {
        out.push({ s: x.s + y.s, groups: new Map([...x.groups, ...y.groups]) });
        if (out.length > limit) throw new Error('language too large to enumerate');
      }
    return out;
  };
  switch (node.t) {
    case 'set': {
      const out = [];
      for (let d = 0; d <= 9; d++) if (node.mask & (1 << d)) out.push({ s: String(d), groups: new Map() });
      return out;
    }
    case 'seq':
      return node.items.reduce(
        (acc, item) => cat(acc, enumerate(item, limit)),
        [{ s: '', groups: new Map() }],
      );
    case 'alt':
      return node.items.flatMap((item) => enumerate(item, limit));
    case 'group': {
      const body = enumerate(node.body, limit);
      if (!node.capture) return body;
      return body.map((x) => ({ s: x.s, groups: new Map([...x.groups, [node.index, x.s]]) }));
    }
    case 'rep': {
      if (!Number.isFinite(node.max)) throw new Error('unbounded repetition in a finite pattern');
      const body = enumerate(node.body, limit);
      const out = [];
      // Greedy: the engine tries the most repetitions first.
      for (let n = node.max; n >= node.min; n--) {
        let acc = [{ s: '', groups: new Map() }];
        for (let i = 0; i < n; i++) acc = cat(acc, body);
        out.push(...acc);
      }
      return out;
    }
  }
  throw new Error(`unknown node ${node.t}`);
}

// ---------------------------------------------------------------- NFA -> DFA -> minimal DFA

/** Thompson NFA of the patterns (each tagged with its bit). */
function thompsonNfa(patterns) {
  // Thompson NFA. eps[s]: epsilon targets; on[s]: [digitMask, target] pairs; tag[s]: accept bits.
  const eps = [];
  const on = [];
  const tag = [];
  const state = () => {
    eps.push([]);
    on.push([]);
    tag.push(0);
    return eps.length - 1;
  };
  function build(node, from) {
    // Returns the end state of the fragment starting at `from`.
    switch (node.t) {
      case 'set': {
        const to = state();
        on[from].push([node.mask, to]);
        return to;
      }
      case 'seq':
        return node.items.reduce((s, item) => build(item, s), from);
      case 'alt': {
        const end = state();
        for (const item of node.items) {
          const start = state();
          eps[from].push(start);
          eps[build(item, start)].push(end);
        }
        return end;
      }
      case 'group':
        return build(node.body, from);
      case 'rep': {
        let s = from;
        for (let i = 0; i < node.min; i++) s = build(node.body, s);
        if (!Number.isFinite(node.max)) {
          const loopStart = state();
          eps[s].push(loopStart);
          const loopEnd = build(node.body, loopStart);
          eps[loopEnd].push(loopStart);
          const end = state();
          eps[s].push(end);
          eps[loopEnd].push(end);
          return end;
        }
        const end = state();
        eps[s].push(end);
        for (let i = node.min; i < node.max; i++) {
          s = build(node.body, s);
          eps[s].push(end);
        }
        return end;
      }
    }
    throw new Error(`unknown node ${node.t}`);
  }
  const start = state();
  for (const { bit, source } of patterns) {
    const s = state();
    eps[start].push(s);
    tag[build(parseRegex(source).ast, s)] |= bit;
  }
  return { start, eps, on, tag };
}

/** Subset construction over the NFA: transitions (row per state, -1 dead) and accept bits. */
function determinize({ start, eps, on, tag }) {
  const closure = (set) => {
    const seen = new Set(set);
    const stack = [...set];
    while (stack.length) {
      for (const t of eps[stack.pop()]) {
        if (!seen.has(t)) {
          seen.add(t);
          stack.push(t);
        }
      }
    }
    return [...seen].sort((a, b) => a - b);
  };
  // Subset construction; the empty set is the dead state and is not materialised.
  const ids = new Map();
  const sets = [];
  const add = (set) => {
    const key = set.join(',');
    let id = ids.get(key);
    if (id === undefined) {
      id = sets.length;
      ids.set(key, id);
      sets.push(set);
    }
    return id;
  };
  add(closure([start]));
  const trans = [];
  const accept = [];
  for (let i = 0; i < sets.length; i++) {
    const set = sets[i];
    accept[i] = set.reduce((m, s) => m | tag[s], 0);
    const row = [];
    for (let d = 0; d <= 9; d++) {
      const next = [];
      for (const s of set) for (const [mask, to] of on[s]) if (mask & (1 << d)) next.push(to);
      row.push(next.length ? add(closure(next)) : -1);
    }
    trans[i] = row;
  }
  return { trans, accept };
}

/** Moore partition refinement, states renumbered in BFS order from the start (stable output). */
function minimize({ trans, accept }) {
  // Moore partition refinement.
  let cls = accept.map((a) => a);
  for (;;) {
    const sig = new Map();
    const next = cls.map((c, i) => {
      const key = `${c}|${trans[i].map((t) => (t < 0 ? -1 : cls[t])).join(',')}`;
      if (!sig.has(key)) sig.set(key, sig.size);
      return sig.get(key);
    });
    const before = new Set(cls).size;
    cls = next;
    if (sig.size === before) break;
  }
  // Renumber so the start state is 0 and states appear in BFS order (stable output).
  const order = new Map([[cls[0], 0]]);
  const repr = [0];
  for (let q = 0; q < repr.length; q++)
    for (const t of trans[repr[q]])
      if (t >= 0 && !order.has(cls[t])) {
        order.set(cls[t], repr.length);
        repr.push(t);
      }
  return {
    states: repr.length,
    trans: repr.flatMap((r) => trans[r].map((t) => (t < 0 ? -1 : order.get(cls[t])))),
    accept: repr.map((r) => accept[r]),
  };
}

/** One minimal DFA accepting, with a bit per pattern, every pattern of `patterns` ({ bit, source }). */
export function buildDfa(patterns) {
  return minimize(determinize(thompsonNfa(patterns)));
}
