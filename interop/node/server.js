#!/usr/bin/env node
// A second server of the convledger wire protocol (spec/wire.md), in plain Node.js
// (version 20 or later, no npm packages), serving an in-memory store of the ledger
// core: append, read, head, exportConversation, importConversation (chapters ENV,
// LED, RPL, ARC, CAN, KND, ERR, CAP). It declares capability `ledger` only; every
// other request is answered `not_supported` (WIR-007, CAP-002).
//
// Payloads are validated against the schemas of spec/schemas/kinds.json (KND-003)
// with the subset of JSON Schema 2020-12 that file uses: type, properties, required,
// additionalProperties, enum, const, minimum, maximum, minLength, pattern, items,
// uniqueItems, allOf, anyOf, not, if/then/else. Patterns use ECMAScript semantics.
//
// Usage: node interop/node/server.js [--kinds PATH]
'use strict';

const fs = require('fs');
const path = require('path');

const PROTOCOL = 1;
const SPEC_VERSION = '0.1';
const MAX_FRAME = 256 * 1024 * 1024;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const MAX_BATCH = 10000;
const DRAFT_MEMBERS = ['eventId', 'kind', 'occurredAt', 'payload', 'schemaVersion', 'ignorable'];
const MAX_LIMIT = 10000;
const DEFAULT_LIMIT = 1000;
const MAX_NESTING = 300; // WIR-048: the frame's map is level 1, no item deeper than 300
// Chapter LIM (spec/limits.json): the limits of every input.
const MAX_ID_BYTES = 1024; // LIM-001
const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024; // LIM-004
const MAX_DEPTH = 128; // LIM-005
const MAX_ARCHIVE_BYTES = 128 * 1024 * 1024; // LIM-006
const MAX_OCCURRED_AT = 64; // LIM-008
const RUNTIME_KINDS = new Set(['runtime/baseline', 'runtime/transition']);
const KNOWN_COMPANIONS = new Map([
  ['runtime', 'transitions'], ['projections', 'projections'], ['spills', 'spills'],
]);

// -- errors --------------------------------------------------------------------------------

class Refusal extends Error {
  constructor(kind, message, requirement, details) {
    super(message);
    this.kind = kind;
    this.requirement = requirement;
    this.details = details || {};
  }
}
const invalid = (message, requirement, field) =>
  new Refusal('invalid_input', message, requirement, field ? { field } : {});
class FrameError extends Error {}

// -- CBOR (WIR-001 .. WIR-003) ---------------------------------------------------------------

// A CBOR float with an integral value: kept apart from integers, so that a float where
// the spec wants an integer (schemaVersion 1.0) is refused as it is in every language.
class IntegralFloat {
  constructor(value) { this.value = value; }
}
// A CBOR map with a key that is not text: no JSON object, refused by the canonical encoder.
class ForeignMap {}

function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function decodeFrame(body) {
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let pos = 0;
  const need = (n) => {
    if (pos + n > body.length) throw new FrameError('the frame ends inside a CBOR item');
  };
  const item = (depth) => {
    if (depth >= MAX_NESTING) throw new FrameError('the frame nests deeper than 300 levels (WIR-048)');
    need(1);
    const initial = body[pos++];
    const major = initial >> 5;
    const info = initial & 0x1f;
    let arg;
    if (info < 24) arg = info;
    else if (info === 24) { need(1); arg = body[pos]; pos += 1; }
    else if (info === 25) { need(2); arg = body.readUInt16BE(pos); pos += 2; }
    else if (info === 26) { need(4); arg = body.readUInt32BE(pos); pos += 4; }
    else if (info === 27) { need(8); arg = body.readBigUInt64BE(pos); pos += 8; }
    else throw new FrameError('indefinite lengths are not part of the protocol (WIR-003)');
    const count = () => {
      const n = Number(arg);
      if (!Number.isSafeInteger(n)) throw new FrameError('a length beyond the frame');
      return n;
    };
    switch (major) {
      case 0: return integer(BigInt(arg));
      case 1: return integer(-1n - BigInt(arg));
      case 2: { const n = count(); need(n); const b = Buffer.from(body.subarray(pos, pos + n)); pos += n; return b; }
      case 3: {
        const n = count(); need(n);
        let text;
        try { text = utf8.decode(body.subarray(pos, pos + n)); } catch (e) { throw new FrameError('text that is not UTF-8'); }
        pos += n;
        return text;
      }
      case 4: { const n = count(); const out = []; for (let i = 0; i < n; i++) out.push(item(depth + 1)); return out; }
      case 5: {
        const n = count();
        const out = Object.create(null);
        let foreign = false;
        const seen = new Set();
        for (let i = 0; i < n; i++) {
          const key = item(depth + 1);
          const value = item(depth + 1);
          if (typeof key !== 'string') { foreign = true; continue; }
          if (seen.has(key)) throw new FrameError('a map with a repeated key');
          seen.add(key);
          out[key] = value;
        }
        return foreign ? new ForeignMap() : out;
      }
      case 6: {
        if (arg !== 2 && arg !== 3) throw new FrameError(`CBOR tag ${arg} is not part of the protocol (WIR-003)`);
        need(1);
        if (body[pos] >> 5 !== 2) throw new FrameError('a bignum tag without a byte string');
        const bytes = item(depth + 1);
        // linear in the bignum's length (a 10^5-digit integer, WIR-049), not a shift per byte
        const magnitude = bytes.length ? BigInt('0x' + bytes.toString('hex')) : 0n;
        return integer(arg === 2 ? magnitude : -1n - magnitude);
      }
      default:
        if (info === 20) return false;
        if (info === 21) return true;
        if (info === 22) return null;
        if (info === 25) return float(halfToNumber(arg));
        if (info === 26) { const b = Buffer.alloc(4); b.writeUInt32BE(arg); return float(b.readFloatBE(0)); }
        if (info === 27) { const b = Buffer.alloc(8); b.writeBigUInt64BE(arg); return float(b.readDoubleBE(0)); }
        throw new FrameError(`the simple value ${arg} is not part of the protocol (WIR-003)`);
    }
  };
  const value = item(0);
  if (pos !== body.length) throw new FrameError('the frame holds bytes after its CBOR value');
  return value;
}

// WIR-010: integers within the safe range are numbers; beyond it BigInts, which no JSON value holds.
function integer(big) {
  return big >= -BigInt(MAX_SAFE) && big <= BigInt(MAX_SAFE) ? Number(big) : big;
}
function float(x) {
  return Number.isInteger(x) ? new IntegralFloat(x) : x;
}

function head(major, n) {
  const big = BigInt(n);
  if (big < 24n) return Buffer.from([(major << 5) | Number(big)]);
  if (big < 0x100n) return Buffer.from([(major << 5) | 24, Number(big)]);
  if (big < 0x10000n) { const b = Buffer.alloc(3); b[0] = (major << 5) | 25; b.writeUInt16BE(Number(big), 1); return b; }
  if (big < 0x100000000n) { const b = Buffer.alloc(5); b[0] = (major << 5) | 26; b.writeUInt32BE(Number(big), 1); return b; }
  const b = Buffer.alloc(9); b[0] = (major << 5) | 27; b.writeBigUInt64BE(big, 1); return b;
}

function numberToHalf(x) {
  // Candidate half bits by truncation; the caller keeps them only if they decode to x.
  const f = Buffer.alloc(4); f.writeFloatBE(x); const bits = f.readUInt32BE(0);
  const sign = (bits >>> 16) & 0x8000;
  const exponent = ((bits >>> 23) & 0xff) - 127;
  const mantissa = bits & 0x7fffff;
  if (x === 0) return sign;
  if (exponent >= -14 && exponent <= 15) return sign | ((exponent + 15) << 10) | (mantissa >>> 13);
  if (exponent >= -24 && exponent < -14) return sign | ((mantissa | 0x800000) >>> (13 + (-14 - exponent)));
  return -1;
}

function encodeFloat(x) {
  if (Number.isNaN(x)) return Buffer.from([0xf9, 0x7e, 0x00]);
  if (!Number.isFinite(x)) return Buffer.from([0xf9, x > 0 ? 0x7c : 0xfc, 0x00]);
  if (Math.fround(x) === x) {
    const h = numberToHalf(x);
    if (h >= 0 && Object.is(halfToNumber(h), x)) { const b = Buffer.alloc(3); b[0] = 0xf9; b.writeUInt16BE(h, 1); return b; }
    const b = Buffer.alloc(5); b[0] = 0xfa; b.writeFloatBE(x, 1); return b;
  }
  const b = Buffer.alloc(9); b[0] = 0xfb; b.writeDoubleBE(x, 1); return b;
}

// Deterministic CBOR (WIR-002): shortest forms, keys sorted length-first then bytewise.
function encode(value) {
  if (value === null || value === undefined) return Buffer.from([0xf6]);
  if (value === true) return Buffer.from([0xf5]);
  if (value === false) return Buffer.from([0xf4]);
  if (value instanceof IntegralFloat) return encodeFloat(value.value);
  if (typeof value === 'bigint') return value >= 0n ? head(0, value) : head(1, -1n - value);
  if (typeof value === 'number') {
    if (Number.isInteger(value) && Math.abs(value) <= MAX_SAFE && !Object.is(value, -0)) {
      return value >= 0 ? head(0, value) : head(1, -1 - value);
    }
    return encodeFloat(value);
  }
  if (typeof value === 'string') { const b = Buffer.from(value, 'utf8'); return Buffer.concat([head(3, b.length), b]); }
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)]);
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(encode)]);
  const entries = Object.keys(value).map((key) => [encode(key), encode(value[key])]);
  entries.sort((a, b) => a[0].length - b[0].length || Buffer.compare(a[0], b[0]));
  return Buffer.concat([head(5, entries.length), ...entries.flat()]);
}

// -- canonical JSON (CAN-001 .. CAN-009) -----------------------------------------------------

const LONE_SURROGATE = /\p{Surrogate}/u;

function canonical(value, depth = 0) {
  if (depth > MAX_NESTING) throw invalid('a value nested too deep', 'CAN-016', 'payload');
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (value instanceof IntegralFloat) value = value.value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid('NaN and the infinities are not JSON numbers', 'CAN-006', 'payload');
    return String(value); // ECMAScript Number.prototype.toString (CAN-005); -0 is "0"
  }
  if (typeof value === 'bigint') throw invalid('an integer outside +-(2^53-1)', 'CAN-006', 'payload');
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) throw invalid('a lone surrogate', 'CAN-008', 'payload');
    return JSON.stringify(value); // the escapes of CAN-004
  }
  if (Array.isArray(value)) return '[' + value.map((v) => canonical(v, depth + 1)).join(',') + ']';
  if (value instanceof ForeignMap) throw invalid('an object member name that is not a string', 'CAN-007', 'payload');
  if (typeof value === 'object' && !Buffer.isBuffer(value) && !(value instanceof Uint8Array)) {
    const keys = Object.keys(value).sort(); // UTF-16 code unit order (CAN-002)
    return '{' + keys.map((k) => canonical(k, depth + 1) + ':' + canonical(value[k], depth + 1)).join(',') + '}';
  }
  throw invalid('a value that is not JSON', 'CAN-006', 'payload');
}

// -- kinds and their schemas (KND) -------------------------------------------------------------

function loadRegistry(file) {
  const document = JSON.parse(fs.readFileSync(file, 'utf8'));
  const table = new Map();
  for (const entry of document.kinds) table.set(`${entry.schemaVersion} ${entry.kind}`, entry.payloadSchema);
  return table;
}

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value; // boolean, string, object
}

function equal(a, b) {
  if (a === b) return true;
  if (typeOf(a) === 'integer' && typeOf(b) === 'integer') return a === b;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (typeOf(a) === 'object' && typeOf(b) === 'object') {
    const ka = Object.keys(a); const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && equal(a[k], b[k]));
  }
  return false;
}

function valid(schema, value) {
  if (schema === true) return true;
  if (schema === false) return false;
  const type = typeOf(value);
  if ('type' in schema) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => t === type || (t === 'number' && type === 'integer'))) return false;
  }
  if ('const' in schema && !equal(schema.const, value)) return false;
  if ('enum' in schema && !schema.enum.some((option) => equal(option, value))) return false;
  if (typeof value === 'number') {
    if ('minimum' in schema && value < schema.minimum) return false;
    if ('maximum' in schema && value > schema.maximum) return false;
  }
  if (typeof value === 'string') {
    if ('minLength' in schema && [...value].length < schema.minLength) return false;
    if ('pattern' in schema && !new RegExp(schema.pattern, 'u').test(value)) return false;
  }
  if (type === 'object') {
    const properties = schema.properties || {};
    for (const name of schema.required || []) if (!Object.prototype.hasOwnProperty.call(value, name)) return false;
    for (const name of Object.keys(value)) {
      if (Object.prototype.hasOwnProperty.call(properties, name)) {
        if (!valid(properties[name], value[name])) return false;
      } else if ('additionalProperties' in schema && !valid(schema.additionalProperties, value[name])) {
        return false;
      }
    }
  }
  if (type === 'array') {
    if ('items' in schema && !value.every((item) => valid(schema.items, item))) return false;
    if (schema.uniqueItems && value.some((x, i) => value.slice(i + 1).some((y) => equal(x, y)))) return false;
  }
  if ('allOf' in schema && !schema.allOf.every((s) => valid(s, value))) return false;
  if ('anyOf' in schema && !schema.anyOf.some((s) => valid(s, value))) return false;
  if ('not' in schema && valid(schema.not, value)) return false;
  if ('if' in schema) {
    if (valid(schema.if, value)) { if ('then' in schema && !valid(schema.then, value)) return false; }
    else if ('else' in schema && !valid(schema.else, value)) return false;
  }
  return true;
}

// -- envelopes (ENV) -------------------------------------------------------------------------

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function checkOccurredAt(value) {
  const short = typeof value === 'string' && value.length <= MAX_OCCURRED_AT; // LIM-008
  const m = short ? RFC3339.exec(value) : null;
  const bad = () => invalid(`occurredAt must be an RFC 3339 date-time with an offset`, 'ENV-008', 'occurredAt');
  if (!m) throw bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > DAYS[month - 1]) throw bad();
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month === 2 && day === 29 && !leap) throw bad();
  if (hour > 23 || minute > 59 || second > 60) throw bad();
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) throw bad();
}

function checkText(value, field, requirement) {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${field} must be a non-empty string`, requirement, field);
  if (LONE_SURROGATE.test(value)) throw invalid(`${field} has a lone surrogate`, requirement, field);
  if (value.length > MAX_ID_BYTES || Buffer.byteLength(value, 'utf8') > MAX_ID_BYTES) {
    throw invalid(`${field} has more than ${MAX_ID_BYTES} UTF-8 bytes`, 'LIM-001', field);
  }
}

// LIM-005: arrays and objects nested at most MAX_DEPTH levels (a scalar is depth 0).
function checkDepth(value, field) {
  const todo = [[value, 1]];
  while (todo.length > 0) {
    const [item, depth] = todo.pop();
    if (item === null || typeof item !== 'object' || Buffer.isBuffer(item) || item instanceof IntegralFloat) continue;
    if (depth > MAX_DEPTH) throw invalid(`${field} nests deeper than ${MAX_DEPTH} levels`, 'LIM-005', field);
    const children = Array.isArray(item) ? item : Object.values(item);
    for (const child of children) todo.push([child, depth + 1]);
  }
}

// LIM-004: the canonical bytes of one JSON value.
function checkSize(text, field) {
  if (text.length > MAX_PAYLOAD_BYTES || Buffer.byteLength(text, 'utf8') > MAX_PAYLOAD_BYTES) {
    throw invalid(`${field} has more than ${MAX_PAYLOAD_BYTES} canonical bytes`, 'LIM-004', field);
  }
  return text;
}

// An integer of the data model: a number without fraction or, beyond 2^53-1, a BigInt.
const isInt = (v) => (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';

function checkPositive(value, field, requirement) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SAFE) throw invalid(`${field} must be an integer from 1 to 2^53-1`, requirement, field);
}

function checkCount(value, field, requirement, minimum, maximum) {
  if (!isInt(value) || value < minimum || (maximum !== undefined && value > maximum)) {
    throw invalid(`${field} is out of range`, requirement, field);
  }
}

const ENVELOPE_MEMBERS = ['schemaVersion', 'eventId', 'conversationId', 'seq', 'kind', 'occurredAt', 'payload'];

function envelopeFromWire(wire) {
  if (typeOf(wire) !== 'object') throw invalid('an envelope is a JSON object', 'ENV-001');
  for (const name of Object.keys(wire)) {
    if (!ENVELOPE_MEMBERS.includes(name) && name !== 'ignorable') throw invalid(`unknown member ${name}`, 'ENV-002', name);
  }
  for (const name of ENVELOPE_MEMBERS) {
    if (!Object.prototype.hasOwnProperty.call(wire, name)) throw invalid(`missing member ${name}`, 'ENV-001', name);
  }
  checkPositive(wire.schemaVersion, 'schemaVersion', 'ENV-003');
  checkText(wire.eventId, 'eventId', 'ENV-004');
  checkText(wire.conversationId, 'conversationId', 'ENV-005');
  checkPositive(wire.seq, 'seq', 'ENV-006');
  checkText(wire.kind, 'kind', 'ENV-007');
  checkOccurredAt(wire.occurredAt);
  if ('ignorable' in wire && wire.ignorable !== true) throw invalid('ignorable must be true when present', 'ENV-010', 'ignorable');
  checkDepth(wire.payload, 'payload');
  checkSize(canonical(wire.payload), 'payload');
  return wire;
}

// CAN-012, CAN-013: the first thing a strict JSON decoder refuses in text JSON.parse accepted:
// [message, requirement], or null.
function strictProblem(text) {
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
  const stack = []; // per open container: a Set of its member names, or null for an array
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const value = JSON.parse(text.slice(i, j + 1));
      if (lone.test(value)) return ['a string with a lone surrogate', 'CAN-013'];
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        if (top.has(value)) return [`the member ${JSON.stringify(value)} twice in one object`, 'CAN-012'];
        top.add(value);
      }
      i = j + 1;
      continue;
    }
    if (c === '{') { stack.push(new Set()); expectKey = true; }
    else if (c === '[') { stack.push(null); expectKey = false; }
    else if (c === '}' || c === ']') { stack.pop(); expectKey = false; }
    else if (c === ':') expectKey = false;
    else if (c === ',') expectKey = stack[stack.length - 1] !== null;
    else if (c === '-' || (c >= '0' && c <= '9')) {
      const token = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i))[0];
      if (/^-?[0-9]+$/.test(token) && !Number.isSafeInteger(Number(token)) && String(Number(token)) !== token) {
        return [`the integer ${token.length > 40 ? 'of ' + token.length + ' digits' : token} is not a double\'s canonical text`, 'CAN-013'];
      }
      i += token.length;
      continue;
    }
    i += 1;
  }
  return null;
}

// -- the store ---------------------------------------------------------------------------------

class MemoryStore {
  constructor(registry) {
    this.registry = registry;
    this.logs = new Map(); // conversationId -> array of canonical envelope texts
    this.eventIds = new Set();
  }

  headOf(conversationId) {
    const log = this.logs.get(conversationId);
    return log ? log.length : 0;
  }

  checkPayload(kind, version, payload) {
    const schema = this.registry.get(`${version} ${kind}`);
    if (schema === undefined) throw invalid(`kind ${kind} v${version} is not registered`, 'KND-002', 'kind');
    if (!valid(schema, payload)) throw invalid(`the payload breaks the schema of ${kind} v${version}`, 'KND-003', 'payload');
  }

  append(args) {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const drafts = args.drafts;
    if (!Array.isArray(drafts)) throw invalid('drafts must be an array of drafts', 'LED-001', 'drafts');
    if (drafts.length < 1 || drafts.length > MAX_BATCH) throw invalid(`an append carries 1 to ${MAX_BATCH} drafts`, 'LED-001', 'drafts');
    const batch = drafts.map((draft) => {
      if (typeOf(draft) !== 'object') throw invalid('an element of drafts is not a draft', 'LED-001', 'drafts');
      // WIR-044: exactly the six members of a draft, none missing, none ignored
      if (Object.keys(draft).length !== DRAFT_MEMBERS.length || !DRAFT_MEMBERS.every((name) => name in draft)) throw invalid('a draft has exactly eventId, kind, occurredAt, payload, schemaVersion and ignorable', 'WIR-044', 'drafts');
      checkPositive(draft.schemaVersion, 'schemaVersion', 'ENV-003');
      checkText(draft.eventId, 'eventId', 'ENV-004');
      checkText(draft.kind, 'kind', 'ENV-007');
      checkOccurredAt(draft.occurredAt);
      if (draft.ignorable !== true && draft.ignorable !== false) throw invalid('ignorable must be a boolean', 'ENV-010', 'ignorable');
      checkDepth(draft.payload, 'payload');
      const payloadText = checkSize(canonical(draft.payload), 'payload'); // ENV-009, LIM-004
      return { draft, payload: JSON.parse(payloadText) };
    });
    // ERR-010: every invalid_input of the call alone, then a repeated eventId of the batch,
    // then conflict, then a stored eventId (this store has no purge).
    for (const { draft, payload } of batch) {
      this.checkPayload(draft.kind, draft.schemaVersion, payload);
      if (RUNTIME_KINDS.has(draft.kind)) throw invalid(`${draft.kind} is never appended`, 'TRN-108', 'kind');
    }
    const expected = args.expectedHead;
    // LIM-007: no head exceeds 2^53-1, so a larger expected head is invalid_input
    if (expected !== undefined && expected !== null) checkCount(expected, 'expectedHead', 'LED-005', 0, MAX_SAFE);
    const seen = new Set();
    for (const { draft } of batch) {
      if (seen.has(draft.eventId)) throw new Refusal('duplicate', 'an eventId repeats in the batch', 'LED-003', { identity: draft.eventId });
      seen.add(draft.eventId);
    }
    const headSeq = this.headOf(conversationId);
    if (expected !== undefined && expected !== null && BigInt(expected) !== BigInt(headSeq)) {
      throw new Refusal('conflict', `the head is ${headSeq}, not ${expected}`, 'LED-005', { actual: headSeq });
    }
    for (const { draft } of batch) {
      if (this.eventIds.has(draft.eventId)) throw new Refusal('duplicate', 'the eventId exists', 'LED-003', { identity: draft.eventId });
    }
    const placed = batch.map(({ draft, payload }, index) => {
      const envelope = {
        schemaVersion: draft.schemaVersion, eventId: draft.eventId, conversationId,
        seq: headSeq + index + 1, kind: draft.kind, occurredAt: draft.occurredAt, payload,
      };
      if (draft.ignorable === true) envelope.ignorable = true;
      return canonical(envelope);
    });
    if (!this.logs.has(conversationId)) this.logs.set(conversationId, []);
    const log = this.logs.get(conversationId);
    for (const text of placed) log.push(text);
    for (const { draft } of batch) this.eventIds.add(draft.eventId);
    return placed.map((text) => JSON.parse(text));
  }

  read(args) {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const fromSeq = 'fromSeq' in args ? args.fromSeq : 1;
    const toSeq = 'toSeq' in args ? args.toSeq : null;
    const limit = 'limit' in args ? args.limit : DEFAULT_LIMIT;
    checkCount(fromSeq, 'fromSeq', 'LED-010', 1);
    if (toSeq !== null) {
      checkCount(toSeq, 'toSeq', 'LED-010', 1);
      if (BigInt(toSeq) < BigInt(fromSeq)) throw invalid('toSeq is before fromSeq', 'LED-010', 'toSeq');
    }
    checkCount(limit, 'limit', 'LED-010', 1, MAX_LIMIT);
    const log = this.logs.get(conversationId) || [];
    const last = toSeq === null ? log.length : Math.min(Number(toSeq), log.length);
    const items = [];
    if (BigInt(fromSeq) > BigInt(log.length)) return { items };
    const first = Number(fromSeq);
    for (let seq = first; seq <= last && items.length < limit; seq++) items.push(JSON.parse(log[seq - 1]));
    const page = { items };
    if (items.length === limit && first + limit <= last) page.nextSeq = first + limit;
    return page;
  }

  head(args) {
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    return this.headOf(args.conversationId);
  }

  exportConversation(args) {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const log = this.logs.get(conversationId);
    if (!log || log.length === 0) throw new Refusal('not_found', 'the conversation has no events', 'ARC-005');
    const text = '{"companions":{},"conversationId":' + canonical(conversationId) + ',"events":[' +
      log.join(',') + '],"format":"convledger.archive","formatVersion":1}';
    return Buffer.from(text, 'utf8');
  }

  importConversation(args) {
    const data = args.archive;
    if (!Buffer.isBuffer(data)) throw invalid('an archive is bytes', 'ARC-003', 'archive'); // WIR-014
    if (data.length > MAX_ARCHIVE_BYTES) throw invalid(`an archive has at most ${MAX_ARCHIVE_BYTES} bytes`, 'LIM-006', 'archive');
    let text;
    let document;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
      document = JSON.parse(text);
    } catch (error) {
      throw invalid('the archive is not a JSON document in UTF-8', 'CAN-010');
    }
    // ERR-011 step 1: what a strict decoder refuses (a repeated member name, a lone surrogate,
    // an integer literal past 2^53 that is not a double's canonical text) is not one JSON text,
    // before formatVersion.
    const strict = strictProblem(text);
    if (strict !== null) throw invalid(strict[0], strict[1], 'archive');
    // ARC-018, ERR-011 step 2: an integer other than 1 (written without fraction or exponent) is
    // another version, whatever `format` says; null, text or 2.0 are refused as invalid_input below.
    if (typeOf(document) === 'object' && Number.isInteger(document.formatVersion) && document.formatVersion !== 1 &&
        /"formatVersion":-?[0-9]+[,}]/.test(text)) {
      throw new Refusal('not_supported', 'another archive formatVersion', 'ARC-002', { capability: 'archive' });
    }
    let again;
    try { again = canonical(document); } catch (error) { throw invalid('the archive is not canonical JSON', 'ARC-003'); }
    if (again !== text) throw invalid('the archive is not canonical JSON', 'ARC-003');
    if (typeOf(document) !== 'object') throw invalid('an archive is an object', 'ARC-002');
    const members = ['format', 'formatVersion', 'conversationId', 'events', 'companions'];
    for (const name of Object.keys(document)) if (!members.includes(name)) throw invalid(`unknown member ${name}`, 'ARC-002');
    for (const name of members) if (!(name in document)) throw invalid(`missing member ${name}`, 'ARC-002');
    if (document.format !== 'convledger.archive') throw invalid('another format', 'ARC-002');
    if (document.formatVersion !== 1 || !/"formatVersion":1[,}]/.test(text)) throw invalid('formatVersion must be the integer 1', 'ARC-018');
    const conversationId = document.conversationId;
    if (typeof conversationId !== 'string' || conversationId.length === 0) throw invalid('a bad conversationId', 'ARC-002');
    const companions = document.companions;
    if (typeOf(companions) !== 'object') throw invalid('companions must be an object', 'ARC-011');
    let absent = null;
    for (const name of Object.keys(companions)) {
      if (!KNOWN_COMPANIONS.has(name)) throw invalid(`unknown companion ${name}`, 'ARC-011');
      absent = absent || KNOWN_COMPANIONS.get(name);
    }
    const events = document.events;
    if (!Array.isArray(events) || events.length === 0) throw invalid('events must be a non-empty array', 'ARC-005');
    const seen = new Set();
    let runtimeEvents = false;
    events.forEach((wire, index) => {
      envelopeFromWire(wire);
      if (wire.conversationId !== conversationId) throw invalid('an event of another conversation', 'ARC-006');
      if (wire.seq !== index + 1) throw invalid('seqs must be exactly 1..n', 'ARC-007');
      if (seen.has(wire.eventId)) throw invalid('an eventId repeats', 'ARC-008');
      seen.add(wire.eventId);
      const key = `${wire.schemaVersion} ${wire.kind}`;
      if (this.registry.has(key)) {
        this.checkPayload(wire.kind, wire.schemaVersion, wire.payload);
      } else if (wire.ignorable !== true) {
        throw new Refusal('replay_refused', `cannot replay ${wire.kind} v${wire.schemaVersion}`, 'RPL-003', {
          conversationId: wire.conversationId, seq: wire.seq, eventId: wire.eventId,
          schemaVersion: wire.schemaVersion, eventKind: wire.kind,
        });
      }
      if (RUNTIME_KINDS.has(wire.kind)) runtimeEvents = true;
    });
    // ERR-012: this server declares no companion's capability, so a companion present is never
    // judged (not_supported below); runtime events without their companion still break TRN-104.
    if (runtimeEvents && !('runtime' in companions)) {
      throw invalid('a runtime companion exactly when the ledger has runtime events', 'TRN-104', 'companions');
    }
    if ('spills' in companions) throw invalid('an archive with spill objects is imported as a bundle', 'SPL-042', 'companions');
    if (absent !== null) {
      throw new Refusal('not_supported', `importing companions needs capability ${absent}`, 'CAP-002', { capability: absent });
    }
    if (this.headOf(conversationId) > 0) {
      throw new Refusal('conflict', 'the target conversation has events', 'ARC-009', { actual: this.headOf(conversationId) });
    }
    for (const wire of events) {
      if (this.eventIds.has(wire.eventId)) throw new Refusal('duplicate', 'an eventId exists', 'ARC-010', { identity: wire.eventId });
    }
    this.logs.set(conversationId, events.map((wire) => canonical(wire)));
    for (const wire of events) this.eventIds.add(wire.eventId);
    return { conversationId, events: events.length, headSeq: events.length };
  }
}

// -- the server ----------------------------------------------------------------------------------

const OPERATIONS = ['append', 'read', 'head', 'exportConversation', 'importConversation'];

class Server {
  constructor(registry) {
    this.registry = registry;
    this.stores = new Map();
    this.nextHandle = 1;
    this.greeted = false;
  }

  store(args) {
    const handle = args.store;
    if (!this.stores.has(handle)) throw invalid(`no open store has handle ${handle}`, 'WIR-020', 'store');
    return this.stores.get(handle);
  }

  dispatch(op, args) {
    if (op === 'hello') {
      // WIR-046: protocol is a CBOR integer (1.0 arrives as an IntegralFloat); another integer is another version
      if (typeof args.protocol !== 'bigint' && typeOf(args.protocol) !== 'integer') throw invalid('hello\'s protocol is an integer', 'WIR-046', 'protocol');
      if (args.protocol !== PROTOCOL) throw new Refusal('not_supported', 'another protocol version', 'WIR-006', { capability: '' });
      this.greeted = true;
      return { protocol: PROTOCOL, spec: SPEC_VERSION, server: 'convledger-node', capabilities: ['ledger'], operations: OPERATIONS };
    }
    if (!this.greeted) throw invalid('the first request must be hello', 'WIR-006');
    if (op === 'newStore') {
      const handle = this.nextHandle++;
      this.stores.set(handle, new MemoryStore(this.registry));
      return { store: handle, capabilities: ['ledger'] };
    }
    const store = this.store(args);
    if (op === 'close') { this.stores.delete(args.store); return null; }
    if (op === 'capabilities') return ['ledger'];
    if (!OPERATIONS.includes(op)) {
      throw new Refusal('not_supported', `this server serves no request ${op}`, 'WIR-007', { capability: '' });
    }
    return store[op](args);
  }

  answer(request) {
    const isId = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n);
    if (typeOf(request) !== 'object') return { id: null, error: { kind: 'invalid_input', message: 'a frame holds a map', requirement: 'WIR-004' } };
    const id = request.id;
    const args = 'args' in request ? request.args : Object.create(null);
    if (!isId(id) || typeof request.op !== 'string' || typeOf(args) !== 'object') {
      return { id: isId(id) ? id : null, error: { kind: 'invalid_input', message: 'a request is {id, op, args?}', requirement: 'WIR-004' } };
    }
    try {
      return { id, ok: this.dispatch(request.op, args) };
    } catch (error) {
      if (error instanceof Refusal) {
        // WIR-025: details hold the members of the kind's row of wire.md's table.
        return { id, error: { kind: error.kind, message: error.message, requirement: error.requirement, details: error.details } };
      }
      return { id, error: { kind: 'internal', message: String(error && error.stack) } };
    }
  }
}

function main() {
  const argv = process.argv.slice(2);
  // WIR-022: the registry is kinds.json of the spec version hello announces.
  const at = argv.indexOf('--kinds');
  const kinds = at >= 0 ? argv[at + 1] : path.join(__dirname, '..', '..', 'spec', 'schemas', 'kinds.json');
  const server = new Server(loadRegistry(kinds));
  let pending = Buffer.alloc(0);
  const reply = (message) => { // WIR-023: frames only on stdout
    const body = encode(message);
    const length = Buffer.alloc(4); length.writeUInt32BE(body.length);
    process.stdout.write(Buffer.concat([length, body]));
  };
  // Chunks of a frame still incomplete wait in a list and are joined once it is complete, so
  // a large frame (an archive near LIM-006's limit) is copied once, not once per chunk.
  let waiting = [];
  let waitingBytes = 0;
  let needed = 4;
  process.stdin.on('data', (chunk) => {
    waiting.push(chunk);
    waitingBytes += chunk.length;
    if (waitingBytes < needed) return;
    pending = waiting.length === 1 ? waiting[0] : Buffer.concat(waiting, waitingBytes);
    waiting = [];
    waitingBytes = 0;
    needed = 4;
    while (pending.length >= 4) {
      const size = pending.readUInt32BE(0);
      if (size > MAX_FRAME) {
        reply({ id: null, error: { kind: 'invalid_input', message: 'a frame over the limit', requirement: 'WIR-004' } });
        process.exitCode = 2;
        process.stdin.destroy();
        return;
      }
      if (pending.length < 4 + size) { needed = 4 + size; break; }
      const body = pending.subarray(4, 4 + size);
      pending = pending.subarray(4 + size);
      let request;
      try {
        request = decodeFrame(body);
      } catch (error) {
        if (!(error instanceof FrameError)) throw error;
        reply({ id: null, error: { kind: 'invalid_input', message: error.message, requirement: 'WIR-004' } });
        continue;
      }
      reply(server.answer(request));
    }
    if (pending.length) { waiting = [pending]; waitingBytes = pending.length; }
    pending = Buffer.alloc(0);
  });
  process.stdin.on('end', () => {
    if (waitingBytes) {
      reply({ id: null, error: { kind: 'invalid_input', message: 'the input ended inside a frame', requirement: 'WIR-004' } });
      process.exitCode = 2;
    }
  });
}

main();
