// Capability `spills` (chapter SPL): the checks of a put (SPL-001 .. SPL-006, SPL-056), the
// authorization recheck of a get (SPL-020 .. SPL-023, SPL-057), delete (SPL-030, SPL-031), the
// `spills` companion of archives (SPL-040 .. SPL-044) and bundles (SPL-050 .. SPL-055). Every rule
// here needs no storage; the storage keeps objects through its `write` and `view` hooks.

import { createHash } from 'node:crypto';

import { MalformedFrame, decode, encode } from './cbor.js';
import { type Draft, type Envelope, MAX_ARCHIVE_BYTES, checkDepth, checkOccurredAt, checkPayload, checkText } from './envelope.js';
import { Refusal, duplicate, invalid } from './errors.js';
import { type Json, canonical, isObject } from './json.js';
import type { SpillMetadata, SpillObject, SpillState, StoredState } from './storage.js';

export const MAX_SPILL_BYTES = 16 * 1024 * 1024; // SPL-003
export const MAX_MEDIA_TYPE_CHARS = 255; // SPL-004
export const MAX_REFERENCE_CHARS = 1024; // SPL-005
export const CREATED = 'spill/created';
export const DELETED = 'spill/deleted';
export const REASONS: readonly string[] = ['deleted', 'expired']; // SPL-030
export const BUNDLE_FORMAT = 'convledger.bundle';
const NAME = '[a-z0-9][a-z0-9!#$&^_.+-]{0,126}';
/** SPL-004, SPL-056: the one spelling of a media type (no flags: `$` is the very end). */
export const MEDIA_TYPE = new RegExp(`^${NAME}/${NAME}(?:; ?${NAME}=(?:${NAME}|"[ -!#-~]*"))*$`);
const HEX64 = /^[0-9a-f]{64}$/;
const ENTRY_MEMBERS = ['bytes', 'createdSeq', 'mediaType', 'operation', 'reference', 'sha256'];
const OPERATION_MEMBERS = ['authorization', 'operationId'];
const BUNDLE_MEMBERS = ['archive', 'format', 'formatVersion', 'objects'];

/** True when `value` has exactly the members `names`. */
function exactly(value: { [key: string]: unknown }, names: readonly string[]): boolean {
  const keys = Object.keys(value);
  return keys.length === names.length && names.every((name) => Object.hasOwn(value, name));
}

/** The lower-case hex sha256 of `data` (SPL-001, SPL-010). */
export function digest(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** SPL-002, SPL-003: a byte string of at most 16 MiB (WIR-016: any other value reaches this check). */
export function checkData(value: unknown): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalid('spill data must be a byte string', 'SPL-002', 'data');
  if (value.length > MAX_SPILL_BYTES) throw invalid(`a spill object has at most ${MAX_SPILL_BYTES} bytes`, 'SPL-003', 'data');
  return value;
}

/** SPL-004, SPL-056: a lower-case `type/subtype` with optional parameters, at most 255 characters. */
export function checkMediaType(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_MEDIA_TYPE_CHARS || !MEDIA_TYPE.test(value)) {
    throw invalid('mediaType must be a lower-case type/subtype', 'SPL-004', 'media_type');
  }
  return value;
}

/** SPL-005: a non-empty identifier of at most 1024 characters (and LIM-001's bytes). */
export function checkReference(value: unknown): string {
  checkText(value, 'reference', 'SPL-005');
  if ([...value].length > MAX_REFERENCE_CHARS) throw invalid(`a reference has at most ${MAX_REFERENCE_CHARS} characters`, 'SPL-005', 'reference');
  return value;
}

/** SPL-006: exactly `{operationId, authorization}`; returns a detached JSON copy (LIM-004, LIM-005). */
export function checkOperation(value: unknown): Json {
  if (!isObject(value) || !exactly(value, OPERATION_MEMBERS)) {
    throw invalid('operation must be exactly {operationId, authorization}', 'SPL-006', 'operation');
  }
  checkText(value.operationId, 'operation.operationId', 'SPL-006');
  if (!isObject(value.authorization)) throw invalid('operation.authorization must be a JSON object', 'SPL-006', 'operation');
  checkDepth(value, 'operation');
  try {
    return checkPayload(value, 'operation');
  } catch (error) {
    if (error instanceof Refusal && error.requirement !== 'LIM-004') throw invalid(`operation is not JSON: ${error.message}`, 'SPL-006', 'operation');
    throw error;
  }
}

/** SPL-030: `deleted` (the default) or `expired`. */
export function checkReason(value: unknown): string {
  if (typeof value !== 'string' || !REASONS.includes(value)) throw invalid('reason must be deleted or expired', 'SPL-030', 'reason');
  return value;
}

/** The draft of a spill event (version 1, never ignorable). */
export function spillDraft(eventId: unknown, kind: string, occurredAt: unknown, payload: Json): Draft {
  checkText(eventId, 'eventId', 'ENV-004');
  checkOccurredAt(occurredAt);
  return { schemaVersion: 1, eventId, kind, occurredAt, payload, ignorable: false };
}

/** SPL-007: a put of a reference live in the conversation. */
export function liveDuplicate(reference: string): Refusal {
  return duplicate(reference, 'SPL-007');
}

/** SPL-021, SPL-031: no live object of that reference in that conversation. */
export function notLive(conversationId: string, reference: string): Refusal {
  return new Refusal('not_found', `no spill ${JSON.stringify(reference)} in conversation ${JSON.stringify(conversationId)}`, 'SPL-021');
}

/** SPL-020: the callback answered something other than exactly true, or raised. */
export function denied(): Refusal {
  return new Refusal('unauthorized', 'the authorization callback denied the spill', 'SPL-020');
}

/** SPL-022: stored bytes that are not the recorded size and sha256. */
export function checkStored(metadata: SpillMetadata, data: Uint8Array): Uint8Array {
  if (data.length !== metadata.bytes || digest(data) !== metadata.sha256) {
    throw new Refusal('integrity', `spill ${JSON.stringify(metadata.reference)} does not match its recorded size and sha256`, 'SPL-022');
  }
  return data;
}

/** The spill hooks of a StoredState, or a TypeError naming what the storage lacks. */
export function spillsOf(state: StoredState): SpillState {
  const { spill, spills, spillData } = state;
  if (spill === undefined || spills === undefined || spillData === undefined) {
    throw new TypeError('capability spills is declared but the StoredState has no spill, spills and spillData');
  }
  return { spill: spill.bind(state), spills: spills.bind(state), spillData: spillData.bind(state) };
}

/** SPL-008 (ERR-010 step 6): an append may not name a live object in a `spill/*` event. */
export function refuseLiveSpillEvents(state: StoredState, drafts: readonly Draft[]): void {
  for (const draft of drafts) {
    const payload = draft.payload;
    if ((draft.kind !== CREATED && draft.kind !== DELETED) || !isObject(payload)) continue;
    const reference = payload.reference;
    if (typeof reference === 'string' && spillsOf(state).spill(reference) !== null) {
      throw invalid(`${draft.kind} of live spill ${JSON.stringify(reference)} is written by putSpill and deleteSpill only`, 'SPL-008', 'kind');
    }
  }
}

function codePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** SPL-040: the companion value, by reference in code-point order. */
export function spillsJson(objects: readonly SpillMetadata[]): SpillMetadata[] {
  return [...objects].sort((a, b) => codePoints(a.reference, b.reference)).map((m) => ({
    reference: m.reference, mediaType: m.mediaType, bytes: m.bytes, sha256: m.sha256, createdSeq: m.createdSeq, operation: m.operation,
  }));
}

function entry(item: unknown): SpillMetadata { // SPL-041
  const shape = (message: string): Refusal => invalid(message, 'SPL-041', 'companions');
  if (!isObject(item) || !exactly(item, ENTRY_MEMBERS)) throw shape('a spill entry is exactly {reference, mediaType, bytes, sha256, createdSeq, operation}');
  const { reference, mediaType, bytes, sha256, createdSeq, operation } = item;
  if (typeof reference !== 'string' || reference === '') throw shape('reference is a non-empty string');
  if (typeof mediaType !== 'string' || !MEDIA_TYPE.test(mediaType)) throw shape('mediaType is a media type');
  for (const [n, low] of [[bytes, 0], [createdSeq, 1]] as const) if (typeof n !== 'number' || !Number.isInteger(n) || n < low) throw shape('bytes and createdSeq are integers');
  if (typeof sha256 !== 'string' || !HEX64.test(sha256)) throw shape('sha256 is 64 lower-case hex digits');
  if (!isObject(operation) || !exactly(operation, OPERATION_MEMBERS) || typeof operation.operationId !== 'string' || operation.operationId === '' || !isObject(operation.authorization)) {
    throw shape('operation is {operationId, authorization}');
  }
  return { reference, mediaType, bytes: bytes as number, sha256, createdSeq: createdSeq as number, operation: operation as Json };
}

/** The last `spill/created` of each reference that no `spill/deleted` followed. */
export function liveSpills(events: readonly Envelope[]): Map<string, Envelope> {
  const live = new Map<string, Envelope>();
  for (const envelope of events) {
    const payload = envelope.payload;
    if (envelope.schemaVersion !== 1 || !isObject(payload) || typeof payload.reference !== 'string') continue;
    if (envelope.kind === CREATED) live.set(payload.reference, envelope);
    else if (envelope.kind === DELETED) live.delete(payload.reference);
  }
  return live;
}

/** SPL-041, SPL-043 (ERR-011 step 3): the companion's entries, checked against the events. */
export function spillProblem(events: readonly Envelope[], companion: unknown): SpillMetadata[] {
  if (!Array.isArray(companion) || companion.length === 0) throw invalid('the spills companion is a non-empty array', 'SPL-041', 'companions');
  const entries = companion.map(entry);
  entries.forEach((m, i) => {
    if (i > 0 && codePoints((entries[i - 1] as SpillMetadata).reference, m.reference) >= 0) throw invalid('spill references are unique and in code-point order', 'SPL-041', 'companions');
  });
  if (canonical(spillsJson(entries), 'companions') !== canonical(companion, 'companions')) throw invalid('spill entries are in their canonical form', 'SPL-041', 'companions');
  const live = liveSpills(events);
  for (const m of entries) {
    const created = live.get(m.reference);
    const expected = canonical({ reference: m.reference, bytes: m.bytes, sha256: m.sha256, mediaType: m.mediaType });
    if (created === undefined || created.seq !== m.createdSeq || canonical(created.payload) !== expected) {
      throw new Refusal('integrity', `spill ${JSON.stringify(m.reference)} is not the live spill/created at seq ${m.createdSeq} of its ledger`, 'SPL-043');
    }
  }
  return entries;
}

/** SPL-050: the bundle of an archive and its objects, in the companion's order (deterministic CBOR). */
export function encodeBundle(archive: Uint8Array, objects: readonly SpillObject[]): Uint8Array {
  const ordered = [...objects].sort((a, b) => codePoints(a.metadata.reference, b.metadata.reference));
  return encode({ archive, format: BUNDLE_FORMAT, formatVersion: 1, objects: ordered.map((o) => [o.metadata.reference, o.data]) });
}

/** A decoded bundle before its archive is checked: the archive's bytes and the objects in order. */
export interface BundleContents {
  readonly archive: Uint8Array;
  readonly objects: readonly (readonly [string, Uint8Array])[];
}

/** SPL-051 (ERR-011 steps 1 and 2, and the bundle's own members): the archive's bytes and the objects. */
export function openBundle(data: unknown): BundleContents {
  const bad = (message: string): Refusal => invalid(message, 'SPL-051', 'bundle');
  if (!(data instanceof Uint8Array)) throw bad('a bundle is a byte string');
  if (data.length > MAX_ARCHIVE_BYTES) throw invalid(`a bundle has at most ${MAX_ARCHIVE_BYTES} bytes`, 'LIM-006', 'bundle');
  let document: unknown;
  try {
    document = decode(data);
  } catch (error) {
    if (error instanceof MalformedFrame) throw bad(`not CBOR: ${error.message}`);
    throw error;
  }
  const version = isObject(document) ? document.formatVersion : undefined;
  if ((typeof version === 'number' && Number.isInteger(version)) || typeof version === 'bigint') {
    if (version !== 1) throw new Refusal('not_supported', 'another bundle formatVersion', 'SPL-051', { capability: '' }); // ARC-018
  }
  if (!isObject(document) || !exactly(document, BUNDLE_MEMBERS)) throw bad('a bundle is a map of exactly archive, format, formatVersion, objects');
  if (document.format !== BUNDLE_FORMAT) throw bad(`format must be ${BUNDLE_FORMAT}`);
  if (version !== 1) throw bad('formatVersion must be the integer 1 (ARC-018)');
  let again: Uint8Array;
  try {
    again = encode(document as never);
  } catch (error) {
    throw bad(`cannot be re-encoded: ${String(error)}`);
  }
  if (Buffer.compare(again, data) !== 0) throw bad('bundle bytes are not deterministic CBOR, so they could not re-export');
  const { archive, objects } = document;
  if (!(archive instanceof Uint8Array) || !Array.isArray(objects)) throw bad('archive is a byte string and objects an array');
  const seen = new Set<string>();
  for (const pair of objects as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || !(pair[1] instanceof Uint8Array) || seen.has(pair[0])) {
      throw bad('each object is a pair [reference, byte string], references unique');
    }
    seen.add(pair[0]);
  }
  return { archive, objects: objects as [string, Uint8Array][] };
}

/** SPL-051, SPL-053: the objects a checked archive's companion vouches for, with their bytes. */
export function bundleObjects(contents: BundleContents, entries: readonly SpillMetadata[]): SpillObject[] {
  if (entries.length !== contents.objects.length || entries.some((m, i) => (contents.objects[i] as readonly [string, Uint8Array])[0] !== m.reference)) {
    throw invalid("objects must pair exactly the spills companion's references, in order", 'SPL-051', 'bundle');
  }
  return entries.map((metadata, index) => {
    const data = (contents.objects[index] as readonly [string, Uint8Array])[1];
    if (data.length !== metadata.bytes || digest(data) !== metadata.sha256) {
      throw new Refusal('integrity', `spill object ${JSON.stringify(metadata.reference)} does not match its size and sha256`, 'SPL-053');
    }
    return { metadata, data };
  });
}
