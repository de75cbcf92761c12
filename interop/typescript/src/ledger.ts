// The operations of a store over its storage hooks: every check that needs no stored state,
// the order of refusals (ERR-007, ERR-010, ERR-011), paging (LED-007 .. LED-011), archives and
// projections (PRJ).

import { type Archive, decodeArchive, encodeArchive } from './archive.js';
import { type Draft, type Envelope, MAX_SAFE, checkCount, checkDraft, checkText, place } from './envelope.js';
import { Refusal, conflict, duplicate, invalid, notSupported, purged } from './errors.js';
import { type Json, canonical, isObject } from './json.js';
import type { KindRegistry } from './kinds.js';
import { DEFAULT_MAX_EVENTS, MAX_EVENTS, advance, checkName, definitionIn, definitionsIn, projectionProblem } from './projections.js';
import { Asking } from './callback.js';
import { CREATED, DELETED, bundleObjects, checkData, checkMediaType, checkOperation, checkReason, checkReference, checkStored, denied, digest, encodeBundle, liveDuplicate, notLive, openBundle, refuseLiveSpillEvents, spillDraft, spillsOf } from './spills.js';
import { DEFAULT_SEARCH_LIMIT, type Hit, checkScope, checkSearchLimit, hitsOf, inCodePointOrder, pageOf, queryWords } from './search.js';
import type { Capability, Checkpoint, SpillMetadata, SpillObject, Storage, StoredState } from './storage.js';

export const MAX_BATCH = 10000; // LED-001
export const MAX_READ_LIMIT = 10000; // LED-010
export const DEFAULT_READ_LIMIT = 1000; // LED-010
/** WIR-012, WIR-044: exactly the members of a draft map. */
export const DRAFT_MEMBERS: readonly string[] = ['eventId', 'ignorable', 'kind', 'occurredAt', 'payload', 'schemaVersion'];

/**
 * WIR-044: a draft map of an append request without exactly the six members is no draft (the
 * reference passes null, refused as "not a draft", LED-001); no member is dropped or defaulted.
 */
function exactDraft(value: unknown): unknown {
  if (!isObject(value)) return value;
  const names = Object.keys(value);
  if (names.length !== DRAFT_MEMBERS.length || !DRAFT_MEMBERS.every((name) => names.includes(name))) {
    throw invalid('a draft has exactly eventId, kind, occurredAt, payload, schemaVersion and ignorable', 'WIR-044', 'drafts');
  }
  return value;
}

const RUNTIME_KINDS = new Set(['runtime/baseline', 'runtime/transition']);

/** Wire arguments: a decoded CBOR map (WIR-013, WIR-026). */
export type Args = { readonly [name: string]: unknown };

/** A page of `read` (LED-007): `nextSeq` present exactly when more may follow (LED-011). */
export interface Page {
  readonly items: readonly Envelope[];
  readonly nextSeq?: number;
}

/** `importConversation`'s answer (ARC-017). */
export interface ImportReport {
  readonly conversationId: string;
  readonly events: number;
  readonly headSeq: number;
}

/** `projectionStatus`'s answer (PRJ-014). */
export interface ProjectionStatus {
  readonly uptoSeq: number;
  readonly head: number;
  readonly version: number | null;
}

const HOOKS: ReadonlySet<string> = new Set(['write', 'view', 'viewAll', 'purge', 'reopen', 'close']);

/**
 * The storage with each hook checked to be synchronous: a hook that returns a Promise (an `async`
 * hook) would let the kit answer before the write happened, so the call fails at once, naming it
 * (the suite sees kind `internal` with this message).
 */
function synchronous(storage: Storage): Storage {
  const checked = new Map<string, { hook: unknown; call: (...args: unknown[]) => unknown }>();
  return new Proxy(storage, {
    get(target, name, receiver): unknown {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof name !== 'string' || !HOOKS.has(name) || typeof value !== 'function') return value;
      const known = checked.get(name); // one wrapper per hook, made on its first call
      if (known !== undefined && known.hook === value) return known.call;
      const call = (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (typeof result === 'object' && result !== null && typeof (result as { then?: unknown }).then === 'function') {
          throw new Error(`the storage hook ${name} returned a Promise: the kit's hooks are synchronous `
            + '(do all I/O before returning; no async, no await)');
        }
        return result;
      };
      checked.set(name, { hook: value, call });
      return call;
    },
  });
}

/** One store: a storage and its declared capabilities, behind the operations of the protocol. */
export class Store {
  readonly capabilities: ReadonlySet<Capability>;

  readonly storage: Storage;

  constructor(storage: Storage, capabilities: readonly Capability[], readonly registry: KindRegistry) {
    this.storage = synchronous(storage);
    this.capabilities = new Set(capabilities);
    if (this.capabilities.has('purge') && typeof storage.purge !== 'function') {
      throw new TypeError('capability purge is declared but the storage has no purge hook');
    }
    if (this.capabilities.has('search') && typeof storage.viewAll !== 'function') {
      throw new TypeError('capability search is declared but the storage has no viewAll hook');
    }
    if (this.capabilities.has('persistence') && typeof storage.reopen !== 'function') {
      throw new TypeError('capability persistence is declared but the storage has no reopen hook');
    }
  }

  private require(capability: Capability, operation: string): void { // CAP-002, first (ERR-007)
    if (!this.capabilities.has(capability)) throw notSupported(capability, `${operation} needs capability ${capability}`);
  }

  /** LED-001 .. LED-006: checks alone (ERR-010 step 1, 2), then the storage's atomic step (3 to 5). */
  append(args: Args): readonly Envelope[] {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const drafts = args.drafts;
    if (!Array.isArray(drafts)) throw invalid('drafts must be an array of drafts', 'LED-001', 'drafts');
    if (drafts.length < 1 || drafts.length > MAX_BATCH) throw invalid(`an append carries 1 to ${MAX_BATCH} drafts`, 'LED-001', 'drafts');
    const batch: Draft[] = drafts.map((draft: unknown) => checkDraft(exactDraft(draft)));
    for (const draft of batch) {
      this.registry.check(draft.kind, draft.schemaVersion, draft.payload);
      if (RUNTIME_KINDS.has(draft.kind)) throw invalid(`${draft.kind} is never appended`, 'TRN-108', 'kind');
    }
    const expected = args.expectedHead ?? null; // WIR-026: null is absence
    if (expected !== null) checkCount(expected, 'expectedHead', 'LED-005', 0, MAX_SAFE); // LIM-007
    const seen = new Set<string>();
    for (const draft of batch) {
      if (seen.has(draft.eventId)) throw duplicate(draft.eventId, 'LED-003');
      seen.add(draft.eventId);
    }
    let placed: readonly Envelope[] = [];
    this.storage.write(conversationId, (state: StoredState) => {
      if (state.purged) throw purged(conversationId);
      if (expected !== null && Number(expected) !== state.head) {
        throw conflict(state.head, `the head is ${state.head}, not ${String(expected)}`, 'LED-005');
      }
      for (const draft of batch) if (state.taken(draft.eventId)) throw duplicate(draft.eventId, 'LED-003');
      if (this.capabilities.has('spills')) refuseLiveSpillEvents(state, batch); // SPL-008, step 6
      placed = batch.map((draft, index) => place(conversationId, state.head + index + 1, draft));
      return { events: placed, checkpoints: [] };
    });
    return placed;
  }

  /** LED-007 .. LED-011: check the window, fetch limit + 1, derive the cursor. */
  read(args: Args): Page {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const fromSeq = 'fromSeq' in args ? args.fromSeq : 1;
    const toSeq = args.toSeq ?? null;
    const limit = 'limit' in args ? args.limit : DEFAULT_READ_LIMIT;
    checkCount(fromSeq, 'fromSeq', 'LED-010', 1);
    if (toSeq !== null) {
      checkCount(toSeq, 'toSeq', 'LED-010', 1);
      if (toSeq < fromSeq) throw invalid('toSeq is before fromSeq', 'LED-010', 'toSeq');
    }
    checkCount(limit, 'limit', 'LED-010', 1, MAX_READ_LIMIT);
    if (fromSeq > MAX_SAFE) return { items: [] }; // no seq exceeds 2^53-1 (ENV-006)
    const to = toSeq === null || toSeq > MAX_SAFE ? null : Number(toSeq);
    const found = this.storage.view(conversationId, (state) => state.read(Number(fromSeq), to, Number(limit) + 1));
    if (found.length > Number(limit)) {
      const items = found.slice(0, Number(limit));
      return { items, nextSeq: (items[items.length - 1] as Envelope).seq + 1 };
    }
    return { items: found };
  }

  /** LED-012. */
  head(args: Args): number {
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    return this.storage.view(args.conversationId, (state) => state.head);
  }

  /** ARC-001, ARC-005, ARC-014, PRJ-040. */
  exportConversation(args: Args): Uint8Array {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const [events, checkpoints, spills] = this.storage.view(conversationId, (state) => [state.read(1, null, MAX_SAFE), this.checkpointsOf(state), this.spillsOf(state)] as const);
    if (events.length === 0) throw new Refusal('not_found', 'the conversation has no events', 'ARC-005');
    return encodeArchive(conversationId, events, checkpoints, spills); // SPL-044: read with the events
  }

  private checkpointsOf(state: StoredState): readonly Checkpoint[] {
    return this.capabilities.has('projections') ? state.checkpoints() : [];
  }

  private spillsOf(state: StoredState): readonly SpillMetadata[] {
    return this.capabilities.has('spills') ? spillsOf(state).spills() : [];
  }

  /** ARC-002 .. ARC-013 in ERR-011's order; steps 7 to 9 inside the storage's atomic step. */
  importConversation(args: Args): ImportReport {
    return this.imported(decodeArchive(args.archive, this.registry, this.capabilities), args, []);
  }

  /** Steps 6 to 9 of ERR-011 for a decoded archive (and a bundle's objects, SPL-055). */
  private imported(archive: Archive, args: Args, objects: readonly SpillObject[]): ImportReport {
    const given = definitionsIn(args.projections ?? undefined); // step 6 (PRJ-043)
    const companion = archive.companions.projections;
    const checkpoints = companion === undefined ? [] : projectionProblem(archive.events, companion, this.registry, given);
    const { conversationId, events } = archive;
    this.storage.write(conversationId, (state: StoredState) => {
      if (state.purged) throw purged(conversationId);
      if (state.head > 0) throw conflict(state.head, 'the target conversation has events', 'ARC-009');
      for (const envelope of events) if (state.taken(envelope.eventId)) throw duplicate(envelope.eventId, 'ARC-010');
      return objects.length > 0 ? { events, checkpoints, spills: objects } : { events, checkpoints }; // PRJ-044, SPL-055: one atomic step
    });
    return { conversationId, events: events.length, headSeq: events.length };
  }

  /** TRN-090 .. TRN-096. */
  purge(args: Args): 'purged' | 'already_purged' {
    this.require('purge', 'purge');
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    if (this.storage.purge === undefined) throw notSupported('purge', 'purge needs capability purge');
    return this.storage.purge(args.conversationId) ? 'purged' : 'already_purged';
  }

  /** PRJ-011 .. PRJ-033: fold at most maxEvents more events and store the checkpoint. */
  catchUp(args: Args): Checkpoint {
    this.require('projections', 'catchUp');
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const definition = definitionIn(args.definition);
    const maxEvents = 'maxEvents' in args ? args.maxEvents : DEFAULT_MAX_EVENTS;
    if (typeof maxEvents !== 'number' || !Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > MAX_EVENTS) {
      throw invalid(`maxEvents must be an integer in 1..${MAX_EVENTS}`, 'PRJ-011', 'max_events');
    }
    let result: Checkpoint | undefined;
    this.storage.write(conversationId, (state) => {
      if (state.purged) throw purged(conversationId); // PRJ-016
      const step = advance(definition, this.registry, state, maxEvents);
      result = step.result;
      return { events: [], checkpoints: step.store ? [step.result] : [] };
    });
    return result as Checkpoint;
  }

  /** PRJ-010. */
  loadCheckpoint(args: Args): Checkpoint | null {
    this.require('projections', 'loadCheckpoint');
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    const name = checkName(args.name);
    return this.storage.view(args.conversationId, (state) => state.checkpoint(name));
  }

  /** PRJ-014: the checkpoint's uptoSeq and version beside the head, read together. */
  projectionStatus(args: Args): ProjectionStatus {
    this.require('projections', 'projectionStatus');
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    const name = checkName(args.name);
    return this.storage.view(args.conversationId, (state) => {
      const stored = state.checkpoint(name);
      return { uptoSeq: stored?.uptoSeq ?? 0, head: state.head, version: stored?.version ?? null };
    });
  }

  /** SPL-001 .. SPL-007, TRN-110: checks in the reference's order, then one atomic step. */
  putSpill(args: Args): SpillMetadata {
    this.require('spills', 'putSpill');
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const data = checkData(args.data);
    const reference = checkReference(args.reference);
    const mediaType = checkMediaType(args.mediaType);
    const operation = checkOperation(args.operation);
    const sha256 = digest(data);
    const draft = spillDraft(args.eventId, CREATED, args.occurredAt, { reference, bytes: data.length, sha256, mediaType });
    this.registry.check(draft.kind, draft.schemaVersion, draft.payload);
    let stored: SpillMetadata | undefined;
    this.storage.write(conversationId, (state) => {
      if (state.purged) throw purged(conversationId); // TRN-110
      if (spillsOf(state).spill(reference) !== null) throw liveDuplicate(reference); // SPL-007
      if (state.taken(draft.eventId)) throw duplicate(draft.eventId, 'LED-003');
      const envelope = place(conversationId, state.head + 1, draft);
      stored = { reference, mediaType, bytes: data.length, sha256, createdSeq: envelope.seq, operation };
      return { events: [envelope], checkpoints: [], spills: [{ metadata: stored, data }] };
    });
    return stored as SpillMetadata;
  }

  /**
   * SPL-020 .. SPL-023, SPL-057: the object and its bytes read together, the client's callback
   * asked about a copy of its descriptor (WIR-030), and only then the bytes checked.
   */
  getSpill(args: Args): Asking {
    this.require('spills', 'getSpill');
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const reference = checkReference(args.reference);
    if (args.authorize !== true) throw invalid('authorize must be a callable', 'SPL-057', 'authorize'); // WIR-030
    const [metadata, data] = this.storage.view(conversationId, (state) => {
      const hooks = spillsOf(state);
      return [hooks.spill(reference), hooks.spillData(reference)] as const;
    });
    if (metadata === null) throw notLive(conversationId, reference);
    const descriptor = JSON.parse(canonical((metadata.operation as { authorization: Json }).authorization, 'operation')) as Json;
    return new Asking(descriptor, (granted) => {
      if (!granted) throw denied(); // SPL-023: before the bytes are checked
      return checkStored(metadata, data ?? new Uint8Array(0));
    });
  }

  /** SPL-030, SPL-031, TRN-110: the object deleted and its event appended in one atomic step. */
  deleteSpill(args: Args): Envelope {
    this.require('spills', 'deleteSpill');
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const reference = checkReference(args.reference);
    const reason = checkReason(args.reason ?? 'deleted');
    const checked = spillDraft(args.eventId, DELETED, args.occurredAt, null);
    let placed: Envelope | undefined;
    this.storage.write(conversationId, (state) => {
      if (state.purged) throw purged(conversationId); // TRN-110: before not_found
      const live = spillsOf(state).spill(reference);
      if (live === null) throw notLive(conversationId, reference);
      const draft = { ...checked, payload: { reference, bytes: live.bytes, reason } };
      this.registry.check(draft.kind, draft.schemaVersion, draft.payload);
      if (state.taken(draft.eventId)) throw duplicate(draft.eventId, 'LED-003');
      placed = place(conversationId, state.head + 1, draft);
      return { events: [placed], checkpoints: [], deletedSpills: [reference] };
    });
    return placed as Envelope;
  }

  /** SPL-050, SPL-054: the archive and its objects' bytes, read in one snapshot. */
  exportBundle(args: Args): Uint8Array {
    this.require('spills', 'exportBundle');
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const [events, checkpoints, objects] = this.storage.view(conversationId, (state) => {
      const hooks = spillsOf(state);
      const live = hooks.spills().map((metadata) => ({ metadata, data: hooks.spillData(metadata.reference) ?? new Uint8Array(0) }));
      return [state.read(1, null, MAX_SAFE), this.checkpointsOf(state), live] as const;
    });
    if (events.length === 0) throw new Refusal('not_found', 'the conversation has no events', 'ARC-005');
    return encodeBundle(encodeArchive(conversationId, events, checkpoints, objects.map((o) => o.metadata)), objects);
  }

  /** SPL-051 .. SPL-055 in ERR-011's order: the bundle, its archive, its objects, then one atomic step. */
  importBundle(args: Args): ImportReport {
    this.require('spills', 'importBundle');
    const contents = openBundle(args.bundle);
    const archive = decodeArchive(contents.archive, this.registry, this.capabilities, true);
    return this.imported(archive, args, bundleObjects(contents, archive.spills));
  }

  /** SRC-001 .. SRC-024: checks before any callback, the hits read in one snapshot, then the grants. */
  search(args: Args): Hit[] | Asking {
    this.require('search', 'search');
    const requester = args.requester;
    checkText(requester, 'requester', 'SRC-001');
    const words = queryWords(args.query);
    const scope = checkScope(args.scope ?? null);
    const limit = checkSearchLimit('limit' in args ? args.limit : DEFAULT_SEARCH_LIMIT);
    const authorize = args.authorize ?? null; // WIR-030: true stands for a callable
    if (authorize !== null && authorize !== true) throw invalid('authorize must be absent or a callable', 'SRC-011', 'authorize');
    if (this.storage.viewAll === undefined) throw notSupported('search', 'search needs capability search');
    const [own, others] = this.storage.viewAll((ids, state) => {
      const candidates = (scope ?? inCodePointOrder(ids)).filter((id) => id !== requester);
      return [hitsOf(state(requester), requester, words, limit), candidates.map((id) => [id, hitsOf(state(id), id, words, limit)] as const)] as const;
    });
    return pageOf(own, others, limit, authorize === true);
  }
}
