// JSON values, the canonical JSON of chapter CAN (RFC 8785) and the strict decoder archives need.

import { ForeignMap, IntegralFloat } from './cbor.js';
import { Refusal, invalid } from './errors.js';

/** A JSON value of the data model (chapter CAN). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Why a strict decode refused its input: the reasons of spec/vectors/canonical (CAN-010 .. CAN-013). */
export type DecodeReason =
  | 'bom'
  | 'duplicate_key'
  | 'integer_out_of_range'
  | 'invalid_utf8'
  | 'lone_surrogate'
  | 'non_finite_number'
  | 'syntax';

/** A strict decode refused: kind `invalid_input` with the vectors' `reason`. */
export class JsonRefusal extends Refusal {
  constructor(readonly reason: DecodeReason, message: string, requirement: string) {
    super('invalid_input', message, requirement);
  }
}

const MAX_NESTING = 512;
const LONE_SURROGATE = /\p{Surrogate}/u;

/** True for a string with a lone surrogate (CAN-008). */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * The canonical JSON text of a value (RFC 8785, CAN-001 .. CAN-009): members sorted by UTF-16
 * code units, numbers as ECMAScript writes them, the escapes of JSON.stringify. Refuses with
 * `invalid_input` a value that is not JSON (NaN, infinities, a BigInt, bytes, a non-text key).
 */
export function canonical(value: unknown, field = 'payload', depth = 0): string {
  if (depth > MAX_NESTING) throw invalid('a value nested too deep', 'CAN-016', field);
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  const plain = value instanceof IntegralFloat ? value.value : value;
  if (typeof plain === 'number') {
    if (!Number.isFinite(plain)) throw invalid('NaN and the infinities are not JSON numbers', 'CAN-006', field);
    return String(plain); // Number.prototype.toString is RFC 8785's number form (CAN-005); -0 is "0"
  }
  if (typeof plain === 'bigint') throw invalid('an integer outside +-(2^53-1)', 'CAN-006', field);
  if (typeof plain === 'string') {
    if (hasLoneSurrogate(plain)) throw invalid('a lone surrogate', 'CAN-008', field);
    return JSON.stringify(plain);
  }
  if (Array.isArray(plain)) return `[${plain.map((v: unknown) => canonical(v, field, depth + 1)).join(',')}]`;
  if (plain instanceof ForeignMap) throw invalid('an object member name that is not a string', 'CAN-007', field);
  const proto: unknown = typeof plain === 'object' ? Object.getPrototypeOf(plain) : undefined;
  if (typeof plain === 'object' && (proto === Object.prototype || proto === null)) {
    const record = plain as { [key: string]: unknown };
    const keys = Object.keys(record).sort(); // UTF-16 code unit order (CAN-002)
    return `{${keys.map((k) => `${canonical(k, field, depth + 1)}:${canonical(record[k], field, depth + 1)}`).join(',')}}`;
  }
  throw invalid('a value that is not JSON', 'CAN-006', field);
}

/** A decoded value as plain JSON (integral floats become numbers): the canonical round trip. */
export function toJson(value: unknown, field = 'payload'): Json {
  return JSON.parse(canonical(value, field)) as Json;
}

/** The kind of a JSON value as JSON Schema names it (`integer` for a number without fraction). */
export function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof IntegralFloat) return 'integer';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'bigint') return 'bigint';
  if (value instanceof Uint8Array) return 'bytes';
  if (value instanceof ForeignMap) return 'foreign';
  return typeof value;
}

/** True for a plain JSON object (a CBOR map with text keys). */
export function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeOf(value) === 'object';
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Decode bytes strictly (CAN-010 .. CAN-013, CAN-016): exactly one JSON text in UTF-8 without a
 * byte order mark, no repeated member name, no number that overflows a double, no lone
 * surrogate, no integer literal beyond +-(2^53-1) unless it is the canonical form of a double.
 * `integerMembers`, when given, receives the names of the top-level object's members written as
 * integer literals (no fraction, no exponent: ARC-018 tells `2` from `2.0`).
 */
export function decodeStrict(bytes: Uint8Array, integerMembers?: Set<string>): Json {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw new JsonRefusal('bom', 'the input starts with a byte order mark', 'CAN-011');
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new JsonRefusal('invalid_utf8', 'the input is not UTF-8', 'CAN-011');
  }
  let pos = 0;
  const syntax = (what: string): JsonRefusal => new JsonRefusal('syntax', `${what} at ${pos}`, 'CAN-010');
  const skip = (): void => { while (pos < text.length && WS.has(text.charCodeAt(pos))) pos++; };
  const expect = (literal: string): void => {
    if (text.startsWith(literal, pos)) pos += literal.length;
    else throw syntax(`expected ${literal}`);
  };
  const string = (): string => {
    expect('"');
    let out = '';
    for (;;) {
      if (pos >= text.length) throw syntax('a string without its end');
      const c = text.charCodeAt(pos);
      if (c === 0x22) { pos++; break; }
      if (c < 0x20) throw syntax('a control character inside a string');
      if (c !== 0x5c) { out += text[pos]; pos++; continue; }
      const e = text[pos + 1];
      pos += 2;
      const simple: { [k: string]: string } = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (e !== undefined && e in simple) { out += simple[e]; continue; }
      if (e !== 'u' || !/^[0-9a-fA-F]{4}$/.test(text.slice(pos, pos + 4))) throw syntax('a bad escape');
      out += String.fromCharCode(parseInt(text.slice(pos, pos + 4), 16));
      pos += 4;
    }
    if (hasLoneSurrogate(out)) throw new JsonRefusal('lone_surrogate', 'a lone surrogate', 'CAN-013');
    return out;
  };
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  let integerLiteral = false;
  const number = (): number => {
    NUMBER.lastIndex = pos;
    const m = NUMBER.exec(text);
    if (!m) throw syntax('a bad value');
    pos = NUMBER.lastIndex;
    const literal = m[0];
    const value = Number(literal);
    integerLiteral = m[1] === undefined && m[2] === undefined;
    if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(value) && String(value) !== literal) {
      throw new JsonRefusal('integer_out_of_range', 'an integer literal outside +-(2^53-1)', 'CAN-013');
    }
    if (!Number.isFinite(value)) throw new JsonRefusal('non_finite_number', 'a number that overflows a double', 'CAN-013');
    return value;
  };
  const value = (depth: number): Json => {
    if (depth > MAX_NESTING) throw syntax('nesting too deep');
    skip();
    const c = text[pos];
    if (c === '{') {
      pos++;
      const out: { [key: string]: Json } = {};
      const seen = new Set<string>();
      skip();
      if (text[pos] === '}') { pos++; return out; }
      for (;;) {
        skip();
        const key = string();
        if (seen.has(key)) throw new JsonRefusal('duplicate_key', `the member ${JSON.stringify(key)} repeats`, 'CAN-012');
        seen.add(key);
        skip(); expect(':');
        integerLiteral = false;
        const item = value(depth + 1);
        if (depth === 0 && integerLiteral && typeof item === 'number') integerMembers?.add(key);
        Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
        skip();
        if (text[pos] === ',') { pos++; continue; }
        expect('}');
        return out;
      }
    }
    if (c === '[') {
      pos++;
      const out: Json[] = [];
      skip();
      if (text[pos] === ']') { pos++; return out; }
      for (;;) {
        out.push(value(depth + 1));
        skip();
        if (text[pos] === ',') { pos++; continue; }
        expect(']');
        return out;
      }
    }
    if (c === '"') return string();
    if (c === 't') { expect('true'); return true; }
    if (c === 'f') { expect('false'); return false; }
    if (c === 'n') { expect('null'); return null; }
    if (text.startsWith('NaN', pos) || text.startsWith('Infinity', pos) || text.startsWith('-Infinity', pos)) {
      throw new JsonRefusal('non_finite_number', 'NaN and the infinities are not JSON', 'CAN-013');
    }
    return number();
  };
  const result = value(0);
  skip();
  if (pos !== text.length) throw syntax('bytes after the JSON text');
  return result;
}
