// The kind registry (chapter KND): schemas/kinds.json, copied from spec/schemas at build time.
//
// Payloads are validated with the subset of JSON Schema 2020-12 that kinds.json uses: type,
// properties, required, additionalProperties, enum, const, minimum, maximum, minLength,
// pattern, items, uniqueItems, allOf, anyOf, not, if/then/else (patterns: see ecmaSearch).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { invalid } from './errors.js';
import { typeOf } from './json.js';

/** A JSON Schema of the subset above. */
export type Schema = boolean | { readonly [keyword: string]: unknown };

/** kinds.json's entries by `schemaVersion kind`. */
export class KindRegistry {
  private readonly table: Map<string, Schema>;

  constructor(document: unknown) {
    this.table = new Map();
    const kinds = (document as { kinds?: unknown }).kinds;
    if (!Array.isArray(kinds)) throw new TypeError('kinds.json has no array `kinds`');
    for (const entry of kinds as { kind: string; schemaVersion: number; payloadSchema: Schema }[]) {
      this.table.set(`${entry.schemaVersion} ${entry.kind}`, entry.payloadSchema);
    }
  }

  /** The registry shipped with the kit (the spec version hello announces, WIR-022). */
  static shipped(): KindRegistry {
    return KindRegistry.fromFile(fileURLToPath(new URL('../../schemas/kinds.json', import.meta.url)));
  }

  static fromFile(path: string): KindRegistry {
    return new KindRegistry(JSON.parse(readFileSync(path, 'utf8')) as unknown);
  }

  has(kind: string, schemaVersion: number): boolean {
    return this.table.has(`${schemaVersion} ${kind}`);
  }

  /** KND-002, KND-003: refuse a kind that is not registered or a payload its schema rejects. */
  check(kind: string, schemaVersion: number, payload: unknown): void {
    const schema = this.table.get(`${schemaVersion} ${kind}`);
    if (schema === undefined) throw invalid(`kind ${kind} v${schemaVersion} is not registered`, 'KND-002', 'kind');
    if (!valid(schema, payload)) throw invalid(`the payload breaks the schema of ${kind} v${schemaVersion}`, 'KND-003', 'payload');
  }
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (typeOf(a) === 'object' && typeOf(b) === 'object') {
    const ra = a as { [k: string]: unknown };
    const rb = b as { [k: string]: unknown };
    const ka = Object.keys(ra);
    return ka.length === Object.keys(rb).length && ka.every((k) => Object.hasOwn(rb, k) && equal(ra[k], rb[k]));
  }
  return false;
}

const patterns = new Map<string, RegExp>();

/**
 * KND-005: a `pattern` is an ECMA-262 regular expression without flags (JSON Schema 2020-12
 * §6.4): `$` matches only at the very end, `\d` is [0-9], a match may start anywhere.
 */
export function ecmaSearch(pattern: string): RegExp {
  return new RegExp(pattern);
}

/** True when `value` (plain JSON) meets `schema`. */
export function valid(schema: Schema, value: unknown): boolean {
  if (schema === true) return true;
  if (schema === false) return false;
  const s = schema as { [k: string]: unknown };
  const type = typeOf(value);
  if ('type' in s) {
    const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
    if (!types.some((t) => t === type || (t === 'number' && type === 'integer'))) return false;
  }
  if ('const' in s && !equal(s.const, value)) return false;
  if ('enum' in s && !(s.enum as unknown[]).some((option) => equal(option, value))) return false;
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) return false;
    if (typeof s.maximum === 'number' && value > s.maximum) return false;
  }
  if (typeof value === 'string') {
    if (typeof s.minLength === 'number' && [...value].length < s.minLength) return false;
    if (typeof s.pattern === 'string') {
      let re = patterns.get(s.pattern);
      if (re === undefined) { re = ecmaSearch(s.pattern); patterns.set(s.pattern, re); }
      if (!re.test(value)) return false;
    }
  }
  if (type === 'object') {
    const record = value as { [k: string]: unknown };
    const properties = (s.properties ?? {}) as { [k: string]: Schema };
    for (const name of (s.required ?? []) as string[]) if (!Object.hasOwn(record, name)) return false;
    for (const name of Object.keys(record)) {
      if (Object.hasOwn(properties, name)) {
        if (!valid(properties[name] as Schema, record[name])) return false;
      } else if ('additionalProperties' in s && !valid(s.additionalProperties as Schema, record[name])) {
        return false;
      }
    }
  }
  if (type === 'array') {
    const items = value as unknown[];
    if ('items' in s && !items.every((item) => valid(s.items as Schema, item))) return false;
    if (s.uniqueItems === true && items.some((x, i) => items.slice(i + 1).some((y) => equal(x, y)))) return false;
  }
  if ('allOf' in s && !(s.allOf as Schema[]).every((sub) => valid(sub, value))) return false;
  if ('anyOf' in s && !(s.anyOf as Schema[]).some((sub) => valid(sub, value))) return false;
  if ('not' in s && valid(s.not as Schema, value)) return false;
  if ('if' in s) {
    if (valid(s.if as Schema, value)) { if ('then' in s && !valid(s.then as Schema, value)) return false; }
    else if ('else' in s && !valid(s.else as Schema, value)) return false;
  }
  return true;
}
