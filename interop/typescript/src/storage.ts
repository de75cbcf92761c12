// What a store author writes: the storage hooks, one small interface per capability.
//
// The kit checks every argument, orders the refusals (ERR-007, ERR-010, ERR-011), builds and
// parses archives and pages; a storage only keeps envelopes, atomically and, for
// `persistence`, durably. Mirror of the Python bases (convledger/store_base.py, PurgeBase).

import type { Envelope } from './envelope.js';

/** The capabilities the kit can serve (chapter CAP). */
export type Capability = 'ledger' | 'persistence' | 'purge';

/** What a write step sees of the stored state, read inside the write's atomic step. */
export interface StoredState {
  /** The last seq of the conversation, 0 when it has none (LED-012). */
  readonly head: number;
  /** True when the conversation was purged (TRN-092); false for a storage without `purge`. */
  readonly purged: boolean;
  /** True when a stored event of ANY conversation carries this eventId (LED-003, ARC-010). */
  taken(eventId: string): boolean;
}

/** Capability `ledger`: the hooks every storage implements. */
export interface LedgerStorage {
  /**
   * In ONE atomic step (LED-002, LED-004, LED-013, TRN-095): read the conversation's state,
   * call `step` with it, and store the envelopes it returns after the conversation's last one,
   * exactly as given (their seqs follow the head). When `step` throws, write nothing and let the
   * error through. With capability `persistence`, return only once the write is durable (DUR).
   */
  write(conversationId: string, step: (state: StoredState) => readonly Envelope[]): void;
  /** Up to `limit` envelopes of the conversation with fromSeq <= seq <= toSeq (toSeq null: no bound), in seq order. */
  read(conversationId: string, fromSeq: number, toSeq: number | null, limit: number): readonly Envelope[];
  /** The last seq of the conversation, 0 for none or a purged one (LED-012, TRN-094). */
  head(conversationId: string): number;
  /** Every envelope of the conversation, read in one atomic snapshot (ARC-014). */
  snapshot(conversationId: string): readonly Envelope[];
  /** Release what the storage holds (the handle is retired, WIR-020). */
  close?(): void;
}

/** Capability `purge` (TRN-090 .. TRN-096). */
export interface PurgeStorage {
  /**
   * In ONE atomic step: delete the conversation's events and keep a tombstone forever
   * (TRN-093); return true when newly purged, false when it was purged before (TRN-090).
   * A conversation that never existed is purged too.
   */
  purge(conversationId: string): boolean;
}

/** Capability `persistence`: the same data through a new handle (WIR-020, LED-015). */
export interface PersistentStorage {
  /** Close this storage and return one on the same data, as a fresh process would see it. */
  reopen(): Storage;
}

/** A storage: the ledger hooks and, for each further declared capability, its hooks. */
export type Storage = LedgerStorage & Partial<PurgeStorage> & Partial<PersistentStorage>;

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
