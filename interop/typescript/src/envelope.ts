// Envelopes and drafts (chapter ENV) and the limits of chapter LIM that bind them.

import { IntegralFloat } from './cbor.js';
import { invalid } from './errors.js';
import { type Json, canonical, hasLoneSurrogate, isObject, typeOf } from './json.js';

/** A stored event (ENV-001); `ignorable` is present only when true (WIR-012). */
export interface Envelope {
  readonly schemaVersion: number;
  readonly eventId: string;
  readonly conversationId: string;
  readonly seq: number;
  readonly kind: string;
  readonly occurredAt: string;
  readonly payload: Json;
  readonly ignorable?: true;
}

/** A checked draft: an envelope without conversationId and seq; its payload plain JSON. */
export interface Draft {
  readonly schemaVersion: number;
  readonly eventId: string;
  readonly kind: string;
  readonly occurredAt: string;
  readonly payload: Json;
  readonly ignorable: boolean;
}

// Chapter LIM (spec/limits.json).
export const MAX_ID_BYTES = 1024; // LIM-001
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024; // LIM-004
export const MAX_DEPTH = 128; // LIM-005
export const MAX_ARCHIVE_BYTES = 128 * 1024 * 1024; // LIM-006
export const MAX_OCCURRED_AT = 64; // LIM-008
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** ENV-008, LIM-008: an RFC 3339 date-time with an offset. */
export function checkOccurredAt(value: unknown): asserts value is string {
  const bad = () => invalid('occurredAt must be an RFC 3339 date-time with an offset', 'ENV-008', 'occurredAt');
  const m = typeof value === 'string' && value.length <= MAX_OCCURRED_AT ? RFC3339.exec(value) : null;
  if (!m) throw bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > (DAYS[month - 1] as number)) throw bad();
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month === 2 && day === 29 && !leap) throw bad();
  if (hour > 23 || minute > 59 || second > 60) throw bad();
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) throw bad();
}

/** A non-empty identifier of at most LIM-001 UTF-8 bytes without a lone surrogate. */
export function checkText(value: unknown, field: string, requirement: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${field} must be a non-empty string`, requirement, field);
  if (hasLoneSurrogate(value)) throw invalid(`${field} has a lone surrogate`, requirement, field);
  if (value.length > MAX_ID_BYTES || Buffer.byteLength(value, 'utf8') > MAX_ID_BYTES) {
    throw invalid(`${field} has more than ${MAX_ID_BYTES} UTF-8 bytes`, 'LIM-001', field);
  }
}

/** LIM-005: arrays and objects nested at most MAX_DEPTH levels (a scalar is depth 0). */
export function checkDepth(value: unknown, field: string): void {
  const todo: [unknown, number][] = [[value, 1]];
  while (todo.length > 0) {
    const [item, depth] = todo.pop() as [unknown, number];
    if (item === null || typeof item !== 'object' || item instanceof Uint8Array || item instanceof IntegralFloat) continue;
    if (depth > MAX_DEPTH) throw invalid(`${field} nests deeper than ${MAX_DEPTH} levels`, 'LIM-005', field);
    for (const child of Array.isArray(item) ? item : Object.values(item)) todo.push([child, depth + 1]);
  }
}

/** LIM-004: the canonical bytes of one JSON value; returns the text. */
export function checkSize(text: string, field: string): string {
  if (text.length > MAX_PAYLOAD_BYTES || Buffer.byteLength(text, 'utf8') > MAX_PAYLOAD_BYTES) {
    throw invalid(`${field} has more than ${MAX_PAYLOAD_BYTES} canonical bytes`, 'LIM-004', field);
  }
  return text;
}

/** An integer from 1 to 2^53-1 travelling as an integer (CAN-017: never a float). */
export function checkPositive(value: unknown, field: string, requirement: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SAFE) {
    throw invalid(`${field} must be an integer from 1 to 2^53-1`, requirement, field);
  }
}

/** An integer (a BigInt beyond 2^53-1) within [minimum, maximum]. */
export function checkCount(value: unknown, field: string, requirement: string, minimum: number, maximum?: number): asserts value is number | bigint {
  const isInt = (typeof value === 'number' && Number.isInteger(value)) || typeof value === 'bigint';
  if (!isInt || value < minimum || (maximum !== undefined && value > maximum)) {
    throw invalid(`${field} is out of range`, requirement, field);
  }
}

/** A JSON payload: its depth, canonical form and size (ENV-009, LIM-004, LIM-005); plain JSON. */
export function checkPayload(value: unknown, field = 'payload'): Json {
  checkDepth(value, field);
  return JSON.parse(checkSize(canonical(value, field), field)) as Json;
}

/** A draft of an append (ENV, WIR-012): checked alone, in member order. */
export function checkDraft(value: unknown): Draft {
  if (!isObject(value)) throw invalid('an element of drafts is not a draft', 'LED-001', 'drafts');
  checkPositive(value.schemaVersion, 'schemaVersion', 'ENV-003');
  checkText(value.eventId, 'eventId', 'ENV-004');
  checkText(value.kind, 'kind', 'ENV-007');
  checkOccurredAt(value.occurredAt);
  if (value.ignorable !== true && value.ignorable !== false) throw invalid('ignorable must be a boolean', 'ENV-010', 'ignorable');
  const payload = checkPayload(value.payload);
  return {
    schemaVersion: value.schemaVersion, eventId: value.eventId, kind: value.kind,
    occurredAt: value.occurredAt, payload, ignorable: value.ignorable,
  };
}

const ENVELOPE_MEMBERS = ['schemaVersion', 'eventId', 'conversationId', 'seq', 'kind', 'occurredAt', 'payload'];

/** An envelope read from an archive (ENV-001 .. ENV-010). */
export function checkEnvelope(wire: unknown): Envelope {
  if (!isObject(wire)) throw invalid('an envelope is a JSON object', 'ENV-001');
  for (const name of Object.keys(wire)) {
    if (!ENVELOPE_MEMBERS.includes(name) && name !== 'ignorable') throw invalid(`unknown member ${name}`, 'ENV-002', name);
  }
  for (const name of ENVELOPE_MEMBERS) {
    if (!Object.hasOwn(wire, name)) throw invalid(`missing member ${name}`, 'ENV-001', name);
  }
  checkPositive(wire.schemaVersion, 'schemaVersion', 'ENV-003');
  checkText(wire.eventId, 'eventId', 'ENV-004');
  checkText(wire.conversationId, 'conversationId', 'ENV-005');
  checkPositive(wire.seq, 'seq', 'ENV-006');
  checkText(wire.kind, 'kind', 'ENV-007');
  checkOccurredAt(wire.occurredAt);
  if ('ignorable' in wire && wire.ignorable !== true) throw invalid('ignorable must be true when present', 'ENV-010', 'ignorable');
  const payload = checkPayload(wire.payload);
  const envelope: Envelope = {
    schemaVersion: wire.schemaVersion, eventId: wire.eventId, conversationId: wire.conversationId,
    seq: wire.seq, kind: wire.kind, occurredAt: wire.occurredAt, payload,
  };
  return wire.ignorable === true ? { ...envelope, ignorable: true } : envelope;
}

/** The envelope a draft becomes at `seq` (ENV-001, WIR-012). */
export function place(conversationId: string, seq: number, draft: Draft): Envelope {
  const envelope: Envelope = {
    schemaVersion: draft.schemaVersion, eventId: draft.eventId, conversationId, seq,
    kind: draft.kind, occurredAt: draft.occurredAt, payload: draft.payload,
  };
  return draft.ignorable ? { ...envelope, ignorable: true } : envelope;
}

export { typeOf };
