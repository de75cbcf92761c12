// Capability spills through a Session (no subprocess): the checks of a put, the authorization
// callback of a get (WIR-030 .. WIR-033, WIR-043), the order of refusals, purge, archives and bundles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CborValue, type Encodable, MEDIA_TYPE, decode, encode } from '@convledger/kit';
import { draft, session } from './support.js';

const kind = (reply: object): string | undefined => ((reply as { error?: unknown }).error as { kind?: string } | undefined)?.kind;
const AT = '2026-03-01T09:00:00Z';
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

function put(reference: string, eventId: string, data: Encodable = bytes('hello'), extra: { [k: string]: Encodable } = {}): { [k: string]: Encodable } {
  return { conversationId: 'c', data, mediaType: 'text/plain', reference, eventId, occurredAt: AT, operation: { operationId: 'op-1', authorization: { user: 'u', scopes: ['read'] } }, ...extra };
}

function spills() {
  const made = session(['ledger', 'purge', 'projections', 'spills']);
  let id = 1000;
  /** Send one frame through CBOR and get the frames the session writes. */
  const send = (frame: { [k: string]: Encodable }): { [k: string]: CborValue }[] =>
    made.s.receive(decode(encode(frame))).map((out) => decode(encode(out as Encodable)) as { [k: string]: CborValue });
  const get = (args: { [k: string]: Encodable }) => send({ id: ++id, op: 'getSpill', args: { store: 1, ...args } });
  return { ...made, send, get };
}

test('putSpill stores the object and its spill/created event in one step (SPL-001, SPL-010)', () => {
  const { call } = spills();
  const metadata = call('putSpill', put('r1', 'e1')).ok as { [k: string]: unknown };
  assert.deepEqual(JSON.parse(JSON.stringify(metadata)), {
    reference: 'r1', mediaType: 'text/plain', bytes: 5, createdSeq: 1, operation: { operationId: 'op-1', authorization: { user: 'u', scopes: ['read'] } },
    sha256: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
  });
  const event = (call('read', { conversationId: 'c' }).ok as { items: { [k: string]: unknown }[] }).items[0] as { [k: string]: unknown };
  assert.equal(event.kind, 'spill/created');
  assert.deepEqual({ ...(event.payload as object) }, { reference: 'r1', bytes: 5, sha256: metadata.sha256, mediaType: 'text/plain' });
  assert.equal((call('putSpill', put('empty', 'e2', new Uint8Array(0))).ok as { bytes: number }).bytes, 0); // SPL-003: empty is size 0
});

test('getSpill asks the callback about a copy of the descriptor, callback 1, 2, ... per request (SPL-020, WIR-030, WIR-043)', () => {
  const { call, send, get } = spills();
  call('putSpill', put('r1', 'e1'));
  const [frame] = get({ conversationId: 'c', reference: 'r1', authorize: true });
  assert.deepEqual(JSON.parse(JSON.stringify(frame)), { callback: 1, kind: 'authorize', args: { value: { user: 'u', scopes: ['read'] } } });
  const [granted] = send({ callbackReply: 1, ok: true });
  assert.deepEqual(Buffer.from(granted?.ok as Uint8Array).toString(), 'hello');
  assert.equal((get({ conversationId: 'c', reference: 'r1', authorize: true })[0] as { callback: number }).callback, 1); // again 1
  assert.equal(kind(send({ callbackReply: 1, ok: false })[0] as object), 'unauthorized');
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  assert.equal(kind(send({ callbackReply: 1, error: { kind: 'internal', message: 'raised' } })[0] as object), 'unauthorized'); // WIR-032
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  assert.equal(kind(send({ callbackReply: 1, ok: 1 })[0] as object), 'unauthorized'); // only exactly true grants
});

test('a frame other than the callback reply: the callback raised, then the stray frame is invalid_input (WIR-033)', () => {
  const { call, send, get, s } = spills();
  call('putSpill', put('r1', 'e1'));
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  const out = send({ id: 77, op: 'head', args: { store: 1, conversationId: 'c' } });
  assert.equal(out.length, 2);
  assert.equal(kind(out[0] as object), 'unauthorized');
  assert.deepEqual([out[1]?.id, kind(out[1] as object)], [77, 'invalid_input']);
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  const ended = s.end(); // the input ended while the callback was pending
  assert.equal(ended.length, 1);
  assert.equal(kind(ended[0] as object), 'unauthorized');
  assert.equal(kind(call('getSpill', { conversationId: 'c', reference: 'r1', authorize: true })), 'unauthorized'); // answer(): no channel
});

test('getSpill refusals: no callback is invalid_input before not_found (SPL-057); not_found for another conversation (SPL-021)', () => {
  const { call, get } = spills();
  call('putSpill', put('r1', 'e1'));
  for (const authorize of [undefined, false, null, 'yes'] as Encodable[]) {
    assert.equal(kind(call('getSpill', { conversationId: 'c', reference: 'missing', ...(authorize === undefined ? {} : { authorize }) })), 'invalid_input');
  }
  assert.equal(kind(get({ conversationId: 'other', reference: 'r1', authorize: true })[0] as object), 'not_found');
  assert.equal(kind(get({ conversationId: 'c', reference: '', authorize: true })[0] as object), 'invalid_input');
});

test('corrupt stored bytes: integrity, but only after the callback granted (SPL-022, SPL-023)', () => {
  const { call, send, get, storages } = spills();
  call('putSpill', put('r1', 'e1'));
  const object = storages[0]?.conversations.get('c')?.spills?.get('r1');
  assert.ok(object);
  (object.data as Uint8Array)[0] = 0x48; // 'H'
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  assert.equal(kind(send({ callbackReply: 1, ok: false })[0] as object), 'unauthorized');
  get({ conversationId: 'c', reference: 'r1', authorize: true });
  assert.equal(kind(send({ callbackReply: 1, ok: true })[0] as object), 'integrity');
});

test('putSpill argument checks (SPL-002 .. SPL-006, SPL-056) and the order purged, live duplicate, stored eventId (TRN-110, SPL-007)', () => {
  const { call } = spills();
  const bad: [string, { [k: string]: Encodable }][] = [
    ['data text', { data: 'hello' }], ['data too long', { data: new Uint8Array(16 * 1024 * 1024 + 1) }],
    ['media upper', { mediaType: 'Text/plain' }], ['media space', { mediaType: 'text/plain ;a=b' }], ['media long', { mediaType: `text/${'a'.repeat(251)}` }],
    ['reference empty', { reference: '' }], ['reference long', { reference: 'r'.repeat(1025) }],
    ['operation extra', { operation: { operationId: 'o', authorization: {}, x: 1 } }], ['operation id empty', { operation: { operationId: '', authorization: {} } }],
    ['authorization list', { operation: { operationId: 'o', authorization: [] } }], ['eventId', { eventId: '' }], ['occurredAt', { occurredAt: 'yesterday' }],
  ];
  for (const [name, extra] of bad) assert.equal(kind(call('putSpill', put('r', 'e', bytes('x'), extra))), 'invalid_input', name);
  assert.equal(kind(call('putSpill', put('r', 'e', bytes('x'), { mediaType: 'text/plain; charset="utf-8"' }))), undefined);
  assert.equal(kind(call('putSpill', put('\u{1F600}'.repeat(256), 'e-astral'))), undefined); // 1024 UTF-8 bytes: LIM-001 binds too
  call('putSpill', put('r1', 'e1'));
  const live = call('putSpill', put('r1', 'e1'));
  assert.deepEqual([kind(live), { ...(live.error as { details: object }).details }], ['duplicate', { identity: 'r1' }]); // SPL-007 before LED-003
  assert.deepEqual({ ...(call('putSpill', put('r2', 'e1')).error as { details: object }).details }, { identity: 'e1' });
  assert.equal(call('head', { conversationId: 'c' }).ok, 3); // every refusal changed nothing
  call('purge', { conversationId: 'c' });
  assert.equal(kind(call('putSpill', put('r1', 'e1'))), 'purged');
  assert.equal(kind(call('putSpill', put('r1', 'e1', 'not bytes'))), 'invalid_input');
  assert.ok(MEDIA_TYPE.test('application/vnd.api+json;q=1'));
  assert.ok(!MEDIA_TYPE.test('text/plain\n'));
});

test('deleteSpill: the event and the removal together; purged before not_found (SPL-030, SPL-031, TRN-110, SPL-032)', () => {
  const { call, get } = spills();
  call('putSpill', put('r1', 'e1'));
  const del = (reference: string, eventId: string, extra: { [k: string]: Encodable } = {}) => call('deleteSpill', { conversationId: 'c', reference, eventId, occurredAt: AT, ...extra });
  assert.equal(kind(del('r1', 'd1', { reason: 'lost' })), 'invalid_input');
  assert.equal(kind(del('nope', 'd1')), 'not_found');
  assert.equal(kind(del('r1', 'e1')), 'duplicate'); // a stored eventId
  const event = del('r1', 'd1', { reason: 'expired' }).ok as { kind: string; seq: number; payload: object };
  assert.deepEqual([event.kind, event.seq, { ...event.payload }], ['spill/deleted', 2, { reference: 'r1', bytes: 5, reason: 'expired' }]);
  assert.equal(kind(get({ conversationId: 'c', reference: 'r1', authorize: true })[0] as object), 'not_found');
  assert.equal((call('putSpill', put('r1', 'e3')).ok as { createdSeq: number }).createdSeq, 3); // a deleted reference may be put again
  call('purge', { conversationId: 'c' });
  assert.equal(kind(get({ conversationId: 'c', reference: 'r1', authorize: true })[0] as object), 'not_found'); // SPL-032
  assert.equal(kind(del('r1', 'd9')), 'purged');
});

test('an append of a spill event naming a live reference is refused after the stored duplicate (SPL-008, ERR-010 step 6)', () => {
  const { call } = spills();
  call('putSpill', put('r1', 'e1'));
  const spillEvent = (eventId: string, reference: string) => ({ ...draft(eventId), kind: 'spill/deleted', payload: { reference, bytes: 5, reason: 'deleted' } });
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [spillEvent('e1', 'r1')] })), 'duplicate');
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [spillEvent('x', 'r1')] })), 'invalid_input');
  assert.equal(kind(call('append', { conversationId: 'c', drafts: [spillEvent('x', 'r2')] })), undefined); // not live: an ordinary event
});

test('archives list live spills; a plain import refuses them; a bundle round-trips byte-equal (SPL-040 .. SPL-055)', () => {
  const { call, get, send } = spills();
  call('putSpill', put('b', 'e1', bytes('bee')));
  call('putSpill', put('a', 'e2', bytes('ay')));
  const archive = call('exportConversation', { conversationId: 'c' }).ok as Uint8Array;
  const document = JSON.parse(Buffer.from(archive).toString()) as { companions: { spills: { reference: string; createdSeq: number }[] } };
  assert.deepEqual(document.companions.spills.map((e) => [e.reference, e.createdSeq]), [['a', 2], ['b', 1]]);
  assert.equal(kind(call('importConversation', { archive })), 'invalid_input'); // SPL-042 (also into a fresh conversation)
  const bundle = call('exportBundle', { conversationId: 'c' }).ok as Uint8Array;
  assert.equal(kind(call('importBundle', { bundle })), 'conflict'); // the conversation has events
  call('newStore'); // handle 2
  assert.deepEqual({ ...(call('importBundle', { store: 2, bundle }).ok as object) }, { conversationId: 'c', events: 2, headSeq: 2 });
  assert.deepEqual(call('exportBundle', { store: 2, conversationId: 'c' }).ok, bundle); // SPL-052
  send({ id: 5000, op: 'getSpill', args: { store: 2, conversationId: 'c', reference: 'b', authorize: true } });
  assert.equal(Buffer.from(send({ callbackReply: 1, ok: true })[0]?.ok as Uint8Array).toString(), 'bee'); // SPL-055
  void get;
  const parts = decode(bundle) as { archive: Uint8Array; objects: [string, Uint8Array][] };
  const again = (changed: { [k: string]: Encodable }) => encode({ archive: parts.archive, format: 'convledger.bundle', formatVersion: 1, objects: parts.objects, ...changed });
  call('newStore'); // handle 3
  const into3 = (b: Encodable) => kind(call('importBundle', { store: 3, bundle: b }));
  assert.equal(into3(again({ objects: [['a', bytes('AY')], ['b', bytes('bee')]] })), 'integrity'); // SPL-053
  assert.equal(into3(again({ objects: [['b', bytes('bee')], ['a', bytes('ay')]] })), 'invalid_input'); // order
  assert.equal(into3(again({ objects: [['a', bytes('ay')]] })), 'invalid_input'); // missing one
  assert.equal(into3(again({ formatVersion: 2 })), 'not_supported');
  assert.equal(into3(again({ format: 'zip' })), 'invalid_input');
  assert.equal(into3(Buffer.concat([bundle, Uint8Array.of(0)])), 'invalid_input'); // trailing byte
  assert.equal(into3(new Uint8Array([...bundle.subarray(0, 1), 0x18, ...bundle.subarray(1)]) as Uint8Array), 'invalid_input'); // not deterministic
  assert.equal(into3(archive), 'invalid_input'); // JSON is not CBOR
  assert.equal(into3('text'), 'invalid_input');
  assert.equal(call('head', { store: 3, conversationId: 'c' }).ok, 0); // nothing written
  call('purge', { store: 3, conversationId: 'c' });
  assert.equal(into3(bundle), 'purged');
});
