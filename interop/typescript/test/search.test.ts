// Capability search through a Session: own hits first, others only when the client's callback
// grants them, asked in code-point order with callbacks 1, 2, ... (SRC-003, SRC-010 .. SRC-013).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CborValue, type Encodable, decode, encode, fold } from '@convledger/kit';
import { draft, session } from './support.js';

const kind = (reply: object): string | undefined => ((reply as { error?: unknown }).error as { kind?: string } | undefined)?.kind;

function searching() {
  const made = session(['ledger', 'purge', 'search']);
  let id = 1000;
  const send = (frame: { [k: string]: Encodable }): { [k: string]: CborValue }[] =>
    made.s.receive(decode(encode(frame))).map((out) => decode(encode(out as Encodable)) as { [k: string]: CborValue });
  const say = (conversationId: string, eventId: string, value: string) => made.call('append', { conversationId, drafts: [draft(eventId, value)] });
  const search = (args: { [k: string]: Encodable }) => send({ id: ++id, op: 'search', args: { store: 1, ...args } });
  return { ...made, send, say, search };
}

const hits = (frame: { [k: string]: CborValue } | undefined): [string, number][] =>
  (frame?.ok as { conversationId: string; seq: number }[]).map((h) => [h.conversationId, h.seq]);

test('own hits first, newest first; others only when granted, in code-point order, callbacks numbered (SRC-003, SRC-011, WIR-043)', () => {
  const { say, search, send } = searching();
  say('me', 'm1', 'red apple');
  say('me', 'm2', 'green Apple');
  say('zed', 'z1', 'apple pie');
  say('\u{1F600}', 'x1', 'apple');
  say('bee', 'b1', 'an APPLE');
  say('cat', 'c1', 'no fruit');
  const first = search({ requester: 'me', query: 'apple', authorize: true });
  assert.deepEqual(JSON.parse(JSON.stringify(first)), [{ callback: 1, kind: 'authorize', args: { value: 'bee' } }]); // cat has no hit: not asked
  assert.equal((send({ callbackReply: 1, ok: false })[0] as { callback: number; args: { value: string } }).args.value, 'zed');
  const third = send({ callbackReply: 2, ok: true });
  assert.deepEqual([third[0]?.callback, (third[0]?.args as { value: string }).value], [3, '\u{1F600}']);
  assert.deepEqual(hits(send({ callbackReply: 3, ok: true })[0]), [['me', 2], ['me', 1], ['zed', 1], ['\u{1F600}', 1]]);
  assert.deepEqual(hits(search({ requester: 'me', query: 'APPLE' })[0]), [['me', 2], ['me', 1]]); // SRC-010: no callback
  assert.deepEqual(hits(search({ requester: 'me', query: 'apple', limit: 1, authorize: true })[0]), [['me', 2]]); // page full: nobody asked
  assert.deepEqual(hits(search({ requester: 'nobody', query: 'pie', scope: ['cat'], authorize: true })[0]), []); // scope: only cat
});

test('refused searches ask nothing (SRC-021 .. SRC-024); purged conversations answer nothing (SRC-004)', () => {
  const { say, search, call } = searching();
  say('me', 'm1', 'apple');
  for (const args of [{ query: '' }, { query: '!!' }, { query: 'a '.repeat(33) }, { query: 7 }, { query: 'x'.repeat(1001) }, { limit: 0 }, { limit: 101 }, { limit: null }, { scope: 'me' }, { authorize: false }, { requester: '' }] as { [k: string]: Encodable }[]) {
    const out = search({ requester: 'other', query: 'apple', authorize: true, ...args });
    assert.deepEqual([out.length, kind(out[0] as object)], [1, 'invalid_input'], JSON.stringify(args));
  }
  call('purge', { conversationId: 'me' });
  assert.deepEqual(hits(search({ requester: 'me', query: 'apple' })[0]), []);
});

test('words fold case and diacritics and nothing else (SRC-025)', () => {
  assert.equal(fold('Café'), 'cafe');
  assert.equal(fold('ÉCOLE'), 'ecole');
  assert.notEqual(fold('running'), fold('runs'));
  assert.match(fold('w'.repeat(201)), /^h:[0-9a-f]{64}$/);
});
