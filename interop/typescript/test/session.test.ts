// The protocol and the order of refusals, through a Session (no subprocess).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { test } from 'node:test';
import { IntegralFloat, Session, decode, encode } from '@convledger/kit';
import { ArrayStorage, SPEC, draft, session } from './support.js';

const kind = (reply: { [k: string]: unknown }): string | undefined => (reply.error as { kind?: string } | undefined)?.kind;

test('the shipped kinds.json is spec/schemas/kinds.json (the spec is its source)', () => {
  const shipped = fileURLToPath(new URL('../../schemas/kinds.json', import.meta.url));
  assert.equal(readFileSync(shipped, 'utf8'), readFileSync(join(SPEC, 'schemas', 'kinds.json'), 'utf8'));
});

test('hello first, protocol 1, operations of the declared capabilities (WIR-006)', () => {
  const s = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
  assert.equal((s.answer({ id: 1, op: 'newStore' }).error as { kind: string }).kind, 'invalid_input');
  assert.equal((s.answer({ id: 2, op: 'hello', args: { protocol: 2 } }).error as { kind: string }).kind, 'not_supported');
  const hello = s.answer({ id: 3, op: 'hello', args: { protocol: 1 } }).ok as { operations: string[]; capabilities: string[] };
  assert.deepEqual(hello.capabilities, ['ledger']);
  assert.deepEqual(hello.operations, ['append', 'exportConversation', 'head', 'importConversation', 'read']);
  assert.deepEqual(s.answer({ id: 4, op: 'frobnicate', args: {} }).id, 4);
  for (const protocol of [new IntegralFloat(1), true, '1', null, {}]) { // WIR-046: not an integer
    const fresh = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
    assert.equal(kind(fresh.answer({ id: 1, op: 'hello', args: { protocol } })), 'invalid_input');
    assert.equal(kind(fresh.answer({ id: 2, op: 'newStore' })), 'invalid_input'); // still not greeted
  }
  const big = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
  const huge = 10n ** 100000n; // WIR-046, WIR-049: another version, shown by its size
  const refused = big.answer({ id: 1, op: 'hello', args: { protocol: huge } }).error as { kind: string; message: string };
  assert.equal(refused.kind, 'not_supported');
  assert.ok(refused.message.length < 200);
  assert.equal(s.answer({ id: 'x', op: 'head' }).id, null);
});

test('append refusals in the order of ERR-010: invalid_input, batch duplicate, purged, conflict, stored duplicate', () => {
  const { call } = session();
  assert.deepEqual((call('append', { conversationId: 'c', drafts: [draft('a'), draft('b')] }).ok as { seq: number }[]).map((e) => e.seq), [1, 2]);
  // a stored eventId and a wrong expected head: conflict first
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [draft('a')], expectedHead: 5 })), 'conflict');
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [draft('a')] })), 'duplicate');
  // a repeated eventId in the batch and a bad draft: invalid_input first
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [draft('x'), draft('x'), { ...draft('y'), schemaVersion: 0 }] })), 'invalid_input');
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [draft('x'), draft('x')], expectedHead: 5 })), 'duplicate');
  assert.equal(call('purge', { conversationId: 'c' }).ok, 'purged');
  assert.equal(call('purge', { conversationId: 'c' }).ok, 'already_purged');
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [draft('z')], expectedHead: 9 })), 'purged');
  assert.deepEqual((call('read', { conversationId: 'c' }).ok as { items: unknown[] }).items, []);
});

test('conflict carries details.actual; duplicate details.identity (WIR-025)', () => {
  const { call } = session();
  call('append', { conversationId: 'c', drafts: [draft('a')] });
  assert.deepEqual({ ...(call('append', { conversationId: 'c', drafts: [draft('b')], expectedHead: 0 }).error as { details: object }).details }, { actual: 1 });
  assert.deepEqual({ ...(call('append', { conversationId: 'd', drafts: [draft('a')] }).error as { details: object }).details }, { identity: 'a' });
});

test('read pages with nextSeq exactly when more may follow (LED-011)', () => {
  const { call } = session();
  call('append', { conversationId: 'c', drafts: [draft('a'), draft('b'), draft('c')] });
  const first = call('read', { conversationId: 'c', limit: 2 }).ok as { items: { seq: number }[]; nextSeq?: number };
  assert.deepEqual(first.items.map((e) => e.seq), [1, 2]);
  assert.equal(first.nextSeq, 3);
  const second = call('read', { conversationId: 'c', fromSeq: 3, limit: 2 }).ok as { nextSeq?: number };
  assert.equal(second.nextSeq, undefined);
  assert.equal(kind(call('read', { conversationId: 'c', limit: '10' })), 'invalid_input');
  assert.equal(kind(call('read', { conversationId: 'c', fromSeq: null })), 'invalid_input');
});


test('a hook that returns a Promise (an async hook) is named at once, kind internal', () => {
  class AsyncWrite extends ArrayStorage {
    // a Promise where the kit's hook returns void: strict tsc accepts it, as it accepts `async write`
    override async write(conversationId: string, step: Parameters<ArrayStorage['write']>[1]): Promise<void> {
      await Promise.resolve();
      super.write(conversationId, step);
    }
  }
  const s = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new AsyncWrite() });
  s.answer({ id: 1, op: 'hello', args: { protocol: 1 } });
  const store = (s.answer({ id: 2, op: 'newStore' }).ok as { store: number }).store;
  const reply = s.answer(decode(encode({ id: 3, op: 'append', args: { store, conversationId: 'c', drafts: [draft('e1')] } })));
  const error = reply.error as { kind: string; message: string };
  assert.equal(error.kind, 'internal');
  assert.match(error.message, /write returned a Promise: the kit's hooks are synchronous/);
});
