// The operations of a store over its storage hooks: every check that needs no stored state,
// the order of refusals (ERR-007, ERR-010, ERR-011), paging (LED-007 .. LED-011) and archives.

import { decodeArchive, encodeArchive } from './archive.js';
import { type Draft, type Envelope, MAX_SAFE, checkCount, checkDraft, checkText, place } from './envelope.js';
import { Refusal, conflict, duplicate, invalid, notSupported, purged } from './errors.js';
import type { KindRegistry } from './kinds.js';
import type { Capability, Storage, StoredState } from './storage.js';

export const MAX_BATCH = 10000; // LED-001
export const MAX_READ_LIMIT = 10000; // LED-010
export const DEFAULT_READ_LIMIT = 1000; // LED-010
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

/** One store: a storage and its declared capabilities, behind the ledger's operations. */
export class Store {
  readonly capabilities: ReadonlySet<Capability>;

  constructor(readonly storage: Storage, capabilities: readonly Capability[], readonly registry: KindRegistry) {
    this.capabilities = new Set(capabilities);
    if (this.capabilities.has('purge') && typeof storage.purge !== 'function') {
      throw new TypeError('capability purge is declared but the storage has no purge hook');
    }
    if (this.capabilities.has('persistence') && typeof storage.reopen !== 'function') {
      throw new TypeError('capability persistence is declared but the storage has no reopen hook');
    }
  }

  /** LED-001 .. LED-006: checks alone (ERR-010 step 1, 2), then the storage's atomic step (3 to 5). */
  append(args: Args): readonly Envelope[] {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const drafts = args.drafts;
    if (!Array.isArray(drafts)) throw invalid('drafts must be an array of drafts', 'LED-001', 'drafts');
    if (drafts.length < 1 || drafts.length > MAX_BATCH) throw invalid(`an append carries 1 to ${MAX_BATCH} drafts`, 'LED-001', 'drafts');
    const batch: Draft[] = drafts.map(checkDraft);
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
      placed = batch.map((draft, index) => place(conversationId, state.head + index + 1, draft));
      return placed;
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
    const found = this.storage.read(conversationId, Number(fromSeq), to, Number(limit) + 1);
    if (found.length > Number(limit)) {
      const items = found.slice(0, Number(limit));
      return { items, nextSeq: (items[items.length - 1] as Envelope).seq + 1 };
    }
    return { items: found };
  }

  /** LED-012. */
  head(args: Args): number {
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    return this.storage.head(args.conversationId);
  }

  /** ARC-001, ARC-005, ARC-014. */
  exportConversation(args: Args): Uint8Array {
    const conversationId = args.conversationId;
    checkText(conversationId, 'conversationId', 'ENV-005');
    const events = this.storage.snapshot(conversationId);
    if (events.length === 0) throw new Refusal('not_found', 'the conversation has no events', 'ARC-005');
    return encodeArchive(conversationId, events);
  }

  /** ARC-002 .. ARC-013 in ERR-011's order; steps 7 to 9 inside the storage's atomic step. */
  importConversation(args: Args): ImportReport {
    const archive = decodeArchive(args.archive, this.registry, this.capabilities);
    const { conversationId, events } = archive;
    this.storage.write(conversationId, (state: StoredState) => {
      if (state.purged) throw purged(conversationId);
      if (state.head > 0) throw conflict(state.head, 'the target conversation has events', 'ARC-009');
      for (const envelope of events) if (state.taken(envelope.eventId)) throw duplicate(envelope.eventId, 'ARC-010');
      return events;
    });
    return { conversationId, events: events.length, headSeq: events.length };
  }

  /** TRN-090 .. TRN-096. */
  purge(args: Args): 'purged' | 'already_purged' {
    if (!this.capabilities.has('purge') || this.storage.purge === undefined) throw notSupported('purge', 'purge needs capability purge');
    checkText(args.conversationId, 'conversationId', 'ENV-005');
    return this.storage.purge(args.conversationId) ? 'purged' : 'already_purged';
  }
}
