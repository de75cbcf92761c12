// What the kit's tests share: the spec's folder and a small storage to drive sessions with.
import { fileURLToPath } from 'node:url';
import { type Capability, type Change, type Conversation, type Storage, type StoredState, Session, applied, arrayState, decode, encode, type CborValue, type Encodable } from '@convledger/kit';

/** The checkout's spec/ (the tests run on the built JS in interop/typescript/dist/test). */
export const SPEC = fileURLToPath(new URL('../../../../spec/', import.meta.url));

export class ArrayStorage implements Storage {
  readonly conversations = new Map<string, Conversation>();
  readonly tombstones = new Set<string>();
  private state(conversationId: string): StoredState {
    const all = [...this.conversations.values()].flatMap((c) => c.events);
    return arrayState(this.conversations.get(conversationId), this.tombstones.has(conversationId), (id) => all.some((e) => e.eventId === id));
  }
  write(conversationId: string, step: (state: StoredState) => Change): void {
    this.conversations.set(conversationId, applied(this.conversations.get(conversationId), step(this.state(conversationId))));
  }
  view<T>(conversationId: string, look: (state: StoredState) => T): T { return look(this.state(conversationId)); }
  viewAll<T>(look: (ids: readonly string[], state: (conversationId: string) => StoredState) => T): T {
    return look([...this.conversations.keys()], (id) => this.state(id));
  }
  purge(conversationId: string): boolean {
    this.conversations.delete(conversationId);
    const newly = !this.tombstones.has(conversationId);
    this.tombstones.add(conversationId);
    return newly;
  }
}

/** A greeted session over ArrayStorage with one store open as handle 1; `call` answers through CBOR. */
export function session(capabilities: Capability[] = ['ledger', 'purge', 'projections']): { call: (op: string, args?: { [k: string]: Encodable }) => { [k: string]: CborValue }; s: Session; storages: ArrayStorage[] } {
  const storages: ArrayStorage[] = [];
  const s = new Session({ name: 'test', capabilities, newStore: () => { const made = new ArrayStorage(); storages.push(made); return made; } });
  let id = 0;
  const call = (op: string, args: { [k: string]: Encodable } = {}): { [k: string]: CborValue } => {
    const request = decode(encode({ id: ++id, op, args: op === 'hello' || op === 'newStore' ? args : { store: 1, ...args } }));
    return decode(encode(s.answer(request))) as { [k: string]: CborValue };
  };
  call('hello', { protocol: 1 });
  call('newStore');
  return { call, s, storages };
}

export function draft(eventId: string, value: Encodable = 1): { [k: string]: Encodable } {
  const payload = { name: 'slot', version: 1, value, actor: 'test' };
  return { schemaVersion: 1, eventId, kind: 'state/set', occurredAt: '2026-03-01T09:00:00Z', payload, ignorable: false };
}
