// What the kit's tests share: the spec's folder and a small storage to drive sessions with.
import { fileURLToPath } from 'node:url';
import { type Envelope, type Storage, type StoredState, Session, decode, encode, type CborValue, type Encodable } from '@convledger/kit';

/** The checkout's spec/ (the tests run on the built JS in interop/typescript/dist/test). */
export const SPEC = fileURLToPath(new URL('../../../../spec/', import.meta.url));

export class ArrayStorage implements Storage {
  readonly logs = new Map<string, Envelope[]>();
  readonly tombstones = new Set<string>();
  write(conversationId: string, step: (state: StoredState) => readonly Envelope[]): void {
    const log = this.logs.get(conversationId) ?? [];
    const all = [...this.logs.values()].flat();
    const placed = step({ head: log.length, purged: this.tombstones.has(conversationId), taken: (id) => all.some((e) => e.eventId === id) });
    this.logs.set(conversationId, [...log, ...placed]);
  }
  read(conversationId: string, fromSeq: number, toSeq: number | null, limit: number): readonly Envelope[] {
    const log = this.logs.get(conversationId) ?? [];
    return log.filter((e) => e.seq >= fromSeq && (toSeq === null || e.seq <= toSeq)).slice(0, limit);
  }
  head(conversationId: string): number { return this.logs.get(conversationId)?.length ?? 0; }
  snapshot(conversationId: string): readonly Envelope[] { return this.logs.get(conversationId) ?? []; }
  purge(conversationId: string): boolean {
    this.logs.delete(conversationId);
    const newly = !this.tombstones.has(conversationId);
    this.tombstones.add(conversationId);
    return newly;
  }
}

/** A greeted session over ArrayStorage with one store open as handle 1; `call` answers through CBOR. */
export function session(): { call: (op: string, args?: { [k: string]: Encodable }) => { [k: string]: CborValue } } {
  const s = new Session({ name: 'test', capabilities: ['ledger', 'purge'], newStore: () => new ArrayStorage() });
  let id = 0;
  const call = (op: string, args: { [k: string]: Encodable } = {}): { [k: string]: CborValue } => {
    const request = decode(encode({ id: ++id, op, args: op === 'hello' || op === 'newStore' ? args : { store: 1, ...args } }));
    return decode(encode(s.answer(request))) as { [k: string]: CborValue };
  };
  call('hello', { protocol: 1 });
  call('newStore');
  return { call };
}

export function draft(eventId: string, value: Encodable = 1): { [k: string]: Encodable } {
  const payload = { name: 'slot', version: 1, value, actor: 'test' };
  return { schemaVersion: 1, eventId, kind: 'state/set', occurredAt: '2026-03-01T09:00:00Z', payload, ignorable: false };
}
