// Archives (chapter ARC): the canonical encoding and the checks of an import, in ERR-011's order.

import { type Envelope, MAX_ARCHIVE_BYTES, checkEnvelope } from './envelope.js';
import { Refusal, invalid, notSupported } from './errors.js';
import { canonical, decodeStrict, isObject } from './json.js';
import type { KindRegistry } from './kinds.js';
import { checkpointsJson, projectionProblem } from './projections.js';
import { spillProblem, spillsJson } from './spills.js';
import type { Checkpoint, SpillMetadata } from './storage.js';

/** The companions of an archive and the capability each needs (ARC-011). */
export const COMPANIONS: ReadonlyMap<string, string> = new Map([
  ['runtime', 'transitions'], ['projections', 'projections'], ['spills', 'spills'],
]);
const RUNTIME_KINDS = new Set(['runtime/baseline', 'runtime/transition']);
const MEMBERS = ['format', 'formatVersion', 'conversationId', 'events', 'companions'];

/** A decoded, checked archive (ARC-002). */
export interface Archive {
  readonly conversationId: string;
  readonly events: readonly Envelope[];
  readonly companions: { readonly [name: string]: unknown };
  /** The checked entries of the `spills` companion (SPL-041, SPL-043); empty without it. */
  readonly spills: readonly SpillMetadata[];
}

/** ARC-001: the canonical archive of one conversation's events, checkpoints (PRJ-040) and live spills (SPL-040). */
export function encodeArchive(conversationId: string, events: readonly Envelope[], checkpoints: readonly Checkpoint[] = [], spills: readonly SpillMetadata[] = []): Uint8Array {
  const companions: { [name: string]: unknown } = {};
  if (checkpoints.length > 0) companions.projections = checkpointsJson(checkpoints);
  if (spills.length > 0) companions.spills = spillsJson(spills);
  const document = { companions, conversationId, events, format: 'convledger.archive', formatVersion: 1 };
  return Buffer.from(canonical(document, 'archive'), 'utf8');
}

/**
 * ARC-002 .. ARC-012 in ERR-011's order, steps 1 to 5: the bytes, another formatVersion, the
 * content in document order, the companions' capabilities. `declared` holds the store's
 * capabilities. The store's state (steps 7 to 9) is the caller's. `bundle`: the archive of a
 * bundle, whose `spills` companion is not refused by SPL-042 (its bytes travel beside it).
 */
export function decodeArchive(data: unknown, registry: KindRegistry, declared: ReadonlySet<string>, bundle = false): Archive {
  if (!(data instanceof Uint8Array)) throw invalid('an archive is bytes', 'ARC-003', 'archive'); // WIR-014
  if (data.length > MAX_ARCHIVE_BYTES) throw invalid(`an archive has at most ${MAX_ARCHIVE_BYTES} bytes`, 'LIM-006', 'archive');
  const integers = new Set<string>();
  const document = decodeStrict(data, integers); // step 1: CAN-010 .. CAN-013
  // step 2, ARC-018: an integer other than 1 (written without fraction or exponent) is another
  // version, whatever `format` says; null, text, 2.0 or a double beyond 2^53 - 1 (10000000000000000)
  // are refused as invalid_input at step 3
  if (isObject(document) && integers.has('formatVersion') && Number.isSafeInteger(document.formatVersion) && document.formatVersion !== 1) {
    throw new Refusal('not_supported', 'another archive formatVersion', 'ARC-002', { capability: '' });
  }
  if (canonical(document, 'archive') !== Buffer.from(data).toString('utf8')) throw invalid('the archive is not canonical JSON', 'ARC-003', 'archive');
  if (!isObject(document)) throw invalid('an archive is an object', 'ARC-002', 'archive');
  for (const name of Object.keys(document)) if (!MEMBERS.includes(name)) throw invalid(`unknown member ${name}`, 'ARC-002', name);
  for (const name of MEMBERS) if (!(name in document)) throw invalid(`missing member ${name}`, 'ARC-002', name);
  if (document.formatVersion !== 1 || !integers.has('formatVersion')) throw invalid('formatVersion must be the integer 1', 'ARC-018', 'formatVersion');
  if (document.format !== 'convledger.archive') throw invalid('another format', 'ARC-002', 'format');
  const conversationId = document.conversationId;
  if (typeof conversationId !== 'string' || conversationId.length === 0) throw invalid('a bad conversationId', 'ARC-002', 'conversationId');
  const companions = document.companions;
  if (!isObject(companions)) throw invalid('companions must be an object', 'ARC-011', 'companions');
  let absent: string | null = null;
  for (const name of Object.keys(companions)) {
    const capability = COMPANIONS.get(name);
    if (capability === undefined) throw invalid(`unknown companion ${name}`, 'ARC-011', 'companions');
    if (!declared.has(capability)) absent = absent ?? capability;
  }
  const events = document.events;
  if (!Array.isArray(events) || events.length === 0) throw invalid('events must be a non-empty array', 'ARC-005', 'events');
  const seen = new Set<string>();
  let runtimeEvents = false;
  const checked = events.map((wire, index) => {
    const envelope = checkEnvelope(wire);
    if (envelope.conversationId !== conversationId) throw invalid('an event of another conversation', 'ARC-006', 'events');
    if (envelope.seq !== index + 1) throw invalid('seqs must be exactly 1..n', 'ARC-007', 'events');
    if (seen.has(envelope.eventId)) throw invalid('an eventId repeats', 'ARC-008', 'events');
    seen.add(envelope.eventId);
    if (registry.has(envelope.kind, envelope.schemaVersion)) {
      registry.check(envelope.kind, envelope.schemaVersion, envelope.payload); // KND-003
    } else if (envelope.ignorable !== true) {
      throw new Refusal('replay_refused', `cannot replay ${envelope.kind} v${envelope.schemaVersion}`, 'RPL-003', {
        conversationId: envelope.conversationId, seq: envelope.seq, eventId: envelope.eventId,
        schemaVersion: envelope.schemaVersion, eventKind: envelope.kind,
      });
    }
    if (RUNTIME_KINDS.has(envelope.kind)) runtimeEvents = true;
    return envelope;
  });
  // ERR-012: a companion is judged only when the store declares its capability; a store without
  // transitions still refuses runtime events without their companion (TRN-104)
  if (declared.has('transitions') ? runtimeEvents !== 'runtime' in companions : runtimeEvents && !('runtime' in companions)) {
    throw invalid('a runtime companion exactly when the ledger has runtime events', 'TRN-104', 'companions');
  }
  // PRJ-041, PRJ-042: the companion's shape, and the built-ins' checkpoints against their fold
  if ('projections' in companions && declared.has('projections')) projectionProblem(checked, companions.projections, registry, null);
  // SPL-041, SPL-043: the spills companion's shape and its agreement with the events
  const spills = 'spills' in companions && declared.has('spills') ? spillProblem(checked, companions.spills) : [];
  if ('spills' in companions && !bundle) throw invalid('an archive with spill objects is imported as a bundle', 'SPL-042', 'companions');
  if (absent !== null) throw notSupported(absent, `importing this companion needs capability ${absent}`);
  return { conversationId, events: checked, companions, spills };
}
