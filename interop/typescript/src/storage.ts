// What a store author writes: the storage hooks, one small interface per capability.
//
// The kit checks every argument, orders the refusals (ERR-007, ERR-010, ERR-011), builds and
// parses archives and pages, folds projections; a storage only keeps, per conversation, its
// envelopes, its projection checkpoints and its spill objects, atomically and, for `persistence`,
// durably. It is the mirror of the Python bases (convledger/store_base.py, PurgeBase,
// ProjectionsBase, SpillsBase): their `_put_spill` and `_delete_spill` are a `write` whose Change
// keeps or deletes objects, `_get_spill` and `_export_bundle_contents` a `view`.
//
// Every hook is synchronous: do all I/O before returning (no async, no await, no Promise); the kit
// refuses a hook that returns a Promise with kind `internal`. Write nothing to standard output: it
// carries the protocol's frames (WIR-023); log with console.error.

import type { Envelope } from './envelope.js';
import type { Json } from './json.js';

/** The capabilities the kit can serve (chapter CAP). */
export type Capability = 'ledger' | 'persistence' | 'purge' | 'projections' | 'spills' | 'search';

/** A projection's stored progress over one conversation (PRJ-010). */
export interface Checkpoint {
  readonly name: string;
  readonly version: number;
  readonly uptoSeq: number;
  readonly state: Json;
}

/**
 * What a store keeps with each live spill object besides its bytes (SPL-010), in the shape of an
 * entry of the archive's `spills` companion (SPL-040) and of `putSpill`'s answer.
 */
export interface SpillMetadata {
  readonly reference: string;
  readonly mediaType: string;
  /** The size of the object in bytes. */
  readonly bytes: number;
  /** Lower-case hex sha256 of the object. */
  readonly sha256: string;
  /** The seq of its `spill/created` event. */
  readonly createdSeq: number;
  /** The creating operation, `{operationId, authorization}` (SPL-006). */
  readonly operation: Json;
}

/** A spill object as a write keeps it: its metadata and its bytes. */
export interface SpillObject {
  readonly metadata: SpillMetadata;
  readonly data: Uint8Array;
}

/** What the kit reads of one conversation, inside one atomic step of the storage. */
export interface StoredState extends Partial<SpillState> {
  /** The last seq of the conversation, 0 when it has none (LED-012). */
  readonly head: number;
  /** True when the conversation was purged (TRN-092); false for a storage without `purge`. */
  readonly purged: boolean;
  /**
   * True when a stored event of ANY conversation carries this eventId (LED-003, ARC-010). The
   * eventIds of a purged conversation may count as taken or not (TRN-096).
   */
  taken(eventId: string): boolean;
  /** Up to `limit` envelopes with fromSeq <= seq <= toSeq (toSeq null: no bound), in seq order. */
  read(fromSeq: number, toSeq: number | null, limit: number): readonly Envelope[];
  /** The stored checkpoint of a projection, or null (capability projections only). */
  checkpoint(name: string): Checkpoint | null;
  /** Every stored checkpoint of the conversation, in any order (capability projections only). */
  checkpoints(): readonly Checkpoint[];
}

/**
 * Capability `spills`: what the kit reads of a conversation's live spill objects, inside the same
 * atomic step or snapshot as the rest of its StoredState (SPL-044, SPL-054); a StoredState of a
 * storage that declares `spills` carries these members (`arrayState` does).
 */
export interface SpillState {
  /** The live object of `reference` in THIS conversation, or null: never one of another conversation (SPL-010, SPL-021). */
  spill(reference: string): SpillMetadata | null;
  /** Every live object of the conversation, in any order (SPL-040). */
  spills(): readonly SpillMetadata[];
  /** The bytes kept for a live object, exactly as stored, or null; the kit checks them against size and sha256 (SPL-022). */
  spillData(reference: string): Uint8Array | null;
}

/** What one write stores: envelopes after the head, exactly as given, and checkpoints by name. */
export interface Change {
  readonly events: readonly Envelope[];
  /** Each replaces the stored checkpoint of its name. */
  readonly checkpoints: readonly Checkpoint[];
  /** Spill objects to keep (capability spills; present only when non-empty): each replaces any of its reference. */
  readonly spills?: readonly SpillObject[];
  /** References whose spill objects to delete (capability spills; present only when non-empty). */
  readonly deletedSpills?: readonly string[];
}

/** Capability `ledger` (and `projections`): the hooks every storage implements. */
export interface LedgerStorage {
  /**
   * In ONE atomic step (LED-002, LED-004, LED-013, TRN-095, PRJ-011, PRJ-044): give `step` the
   * conversation's state, then store the change it returns (envelopes, checkpoints and, for
   * `spills`, objects kept and deleted: SPL-001, SPL-030, SPL-055); nothing another writer (thread,
   * handle or process) does may come between. When `step` throws, store nothing and let the
   * error through. With capability `persistence`, return only once the change is durable (DUR).
   */
  write(conversationId: string, step: (state: StoredState) => Change): void;
  /** In one atomic snapshot (ARC-014, PRJ-014, SPL-044, SPL-054): give `look` the conversation's state. */
  view<T>(conversationId: string, look: (state: StoredState) => T): T;
  /** Release what the storage holds (the handle is retired, WIR-020). */
  close?(): void;
}

/** Capability `purge` (TRN-090 .. TRN-096). */
export interface PurgeStorage {
  /**
   * In ONE atomic step: delete the conversation's events, checkpoints and spill objects (SPL-032)
   * and keep a tombstone
   * forever (TRN-093); return true when newly purged, false when it was purged before
   * (TRN-090). A conversation that never existed is purged too.
   */
  purge(conversationId: string): boolean;
}

/** Capability `persistence`: the same data through a new handle (WIR-020, LED-015). */
export interface PersistentStorage {
  /** Close this storage and return one on the same data, as a fresh process would see it. */
  reopen(): Storage;
}

/** Capability `search` (SRC-004): every conversation, in one snapshot. */
export interface SearchStorage {
  /**
   * In one atomic snapshot: give `look` the ids of every conversation that has events (never a
   * purged one, SRC-004) and the StoredState of any conversation; the kit finds the hits.
   */
  viewAll<T>(look: (conversationIds: readonly string[], state: (conversationId: string) => StoredState) => T): T;
}

/** A storage: the ledger hooks and, for each further declared capability, its hooks. */
export type Storage = LedgerStorage & Partial<PurgeStorage> & Partial<PersistentStorage> & Partial<SearchStorage>;

/** What `serve` needs: a name, the declared capabilities (CAP-001), and how to make storages. */
export interface StoreFactory {
  /** The server's name in `hello` (WIR-006). */
  readonly name: string;
  /** The declared capabilities; `ledger` is always served. */
  readonly capabilities: readonly Capability[];
  /** A new, empty storage sharing nothing with the others (WIR-020). */
  newStore(): Storage;
  /**
   * The storage kept at `location` (a directory the suite made), shared with every other
   * process that opens it (WIR-040, WIR-041): present for a storage that persists.
   */
  openStore?(location: string): Storage;
}

/** Per conversation, what a storage that keeps plain arrays holds; see `arrayState`. */
export interface Conversation {
  readonly events: Envelope[];
  readonly checkpoints: Map<string, Checkpoint>;
  /** The live spill objects by reference (capability spills; made by `applied` when needed). */
  spills?: Map<string, SpillObject>;
}

/** A StoredState over a conversation kept as an array in seq order (the examples' shape). */
export function arrayState(conversation: Conversation | undefined, purged: boolean, taken: (eventId: string) => boolean): StoredState {
  const events = conversation?.events ?? [];
  const checkpoints = conversation?.checkpoints ?? new Map<string, Checkpoint>();
  return {
    head: events.length,
    purged,
    taken,
    read: (fromSeq, toSeq, limit) => events.slice(fromSeq - 1, Math.min(toSeq ?? events.length, events.length, fromSeq - 1 + limit)),
    checkpoint: (name) => checkpoints.get(name) ?? null,
    checkpoints: () => [...checkpoints.values()],
    spill: (reference) => conversation?.spills?.get(reference)?.metadata ?? null,
    spills: () => [...(conversation?.spills?.values() ?? [])].map((object) => object.metadata),
    spillData: (reference) => conversation?.spills?.get(reference)?.data ?? null,
  };
}

/**
 * The conversation after a change: its events appended, its checkpoints replaced by name and its
 * spill objects deleted and kept by reference, in
 * place (a new conversation when there was none), so that applying n changes costs O(n).
 */
export function applied(conversation: Conversation | undefined, change: Change): Conversation {
  const target = conversation ?? { events: [], checkpoints: new Map<string, Checkpoint>() };
  for (const envelope of change.events) target.events.push(envelope);
  for (const checkpoint of change.checkpoints) target.checkpoints.set(checkpoint.name, checkpoint);
  for (const reference of change.deletedSpills ?? []) target.spills?.delete(reference);
  for (const object of change.spills ?? []) (target.spills ??= new Map()).set(object.metadata.reference, object);
  return target;
}
