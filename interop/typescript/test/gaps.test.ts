// The decisions of issues 33 and 36 a wire server follows (WIR-043 .. WIR-049, ARC-018, ERR-012,
// PRJ-054, PRJ-055), through the kit's decoder and a Session (no subprocess).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MalformedFrame, Session, decode, encode } from '@convledger/kit';
import { ArrayStorage, draft, session } from './support.js';

const kind = (reply: { [k: string]: unknown }): string | undefined => (reply.error as { kind?: string } | undefined)?.kind;

test('a map with a repeated key is a malformed frame, at any depth (WIR-047)', () => {
  // {"a": 1, "a": 2}: map(2), text "a", 1, text "a", 2
  assert.throws(() => decode(Uint8Array.of(0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02)), MalformedFrame);
  // {"x": {1: 0, 1: 0}} (non-text keys compared by their encoding; 0x18 0x01 is 1 in a longer form)
  assert.throws(() => decode(Uint8Array.of(0xa1, 0x61, 0x78, 0xa2, 0x01, 0x00, 0x18, 0x01, 0x00)), MalformedFrame);
  assert.deepEqual({ ...(decode(Uint8Array.of(0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x02)) as object) }, { a: 1, b: 2 });
});

test('a frame nests at most 300 levels, the frame map being level 1 (WIR-048)', () => {
  const nested = (levels: number): Uint8Array => { // {"v": [[...[]...]]}: the map, then levels - 1 arrays
    const body = [0xa1, 0x61, 0x76];
    for (let i = 0; i < levels - 2; i++) body.push(0x81);
    body.push(0x80);
    return Uint8Array.from(body);
  };
  assert.ok(decode(nested(300)));
  assert.throws(() => decode(nested(301)), MalformedFrame);
});

test('an integer of 10^5 digits decodes in linear time and is answered, never internal (WIR-049)', () => {
  const huge = 10n ** 100000n;
  const body = encode({ id: 1, op: 'head', args: { store: huge, conversationId: 'c' } });
  const request = decode(body);
  const s = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
  s.answer({ id: 0, op: 'hello', args: { protocol: 1 } });
  const reply = s.answer(request);
  assert.equal(reply.id, 1);
  const error = reply.error as { kind: string; message: string };
  assert.equal(error.kind, 'invalid_input');
  assert.ok(error.message.length < 200, 'the message shows the integer by its size');
});

test('a request map with a non-text key is still a request; other members are ignored (WIR-045, WIR-004)', () => {
  const s = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
  // {1: 0, "id": 7, "op": "hello", "args": {"protocol": 1}}
  const frame = Uint8Array.from([0xa4, 0x01, 0x00, 0x62, 0x69, 0x64, 0x07, 0x62, 0x6f, 0x70, 0x65, ...Buffer.from('hello'),
    0x64, ...Buffer.from('args'), 0xa1, 0x68, ...Buffer.from('protocol'), 0x01]);
  const reply = s.answer(decode(frame));
  assert.equal(reply.id, 7);
  assert.ok(reply.ok);
  assert.ok(s.answer({ id: 8, op: 'newStore', args: {}, trace: 'x' }).ok);
  // args {1: 0, "store": 1, "conversationId": "c"}: the non-text member is ignored (WIR-026)
  const head = Uint8Array.from([0xa3, 0x62, 0x69, 0x64, 0x09, 0x62, 0x6f, 0x70, 0x64, ...Buffer.from('head'),
    0x64, ...Buffer.from('args'), 0xa3, 0x01, 0x00, 0x65, ...Buffer.from('store'), 0x01,
    0x6e, ...Buffer.from('conversationId'), 0x61, 0x63]);
  assert.equal(s.answer(decode(head)).ok, 0);
});

test('a draft map of an append has exactly its six members (WIR-044)', () => {
  const { call } = session();
  const extra = { ...draft('a'), ignorabel: true };
  const { ignorable: _dropped, ...missing } = draft('b');
  for (const bad of [extra, missing]) {
    const reply = call('append', { conversationId: 'c', drafts: [bad] });
    assert.equal(kind(reply), 'invalid_input');
  }
  assert.equal(call('head', { conversationId: 'c' }).ok, 0);
  assert.ok(call('append', { conversationId: 'c', drafts: [draft('c')] }).ok);
});

const archive = (text: string): Uint8Array => Buffer.from(text, 'utf8');
const EVENT = '{"conversationId":"c","eventId":"e","kind":"state/set","occurredAt":"2026-03-01T09:00:00Z","payload":{"actor":"t","name":"s","value":1,"version":1},"schemaVersion":1,"seq":1}';

test('archive formatVersion: an integer other than 1 is not_supported whatever format says; 2.0, null, text are invalid_input (ARC-018)', () => {
  const { call } = session();
  const doc = (version: string, format = 'convledger.archive'): Uint8Array =>
    archive(`{"companions":{},"conversationId":"c","events":[${EVENT}],"format":"${format}","formatVersion":${version}}`);
  assert.ok(call('importConversation', { archive: doc('1') }).ok);
  const refused = call('importConversation', { archive: doc('2', 'something.else') });
  assert.equal(kind(refused), 'not_supported');
  for (const version of ['2.0', '1.0', 'null', '"1"', 'true']) {
    assert.equal(kind(call('importConversation', { archive: doc(version) })), 'invalid_input', version);
  }
  // step 1 before step 2: a repeated member with formatVersion 2 is invalid_input
  const repeated = archive(`{"companions":{},"conversationId":"c","conversationId":"c","events":[${EVENT}],"format":"convledger.archive","formatVersion":2}`);
  assert.equal(kind(call('importConversation', { archive: repeated })), 'invalid_input');
});

test('a companion whose capability is not declared is refused not_supported, never judged (ERR-012)', () => {
  const s = new Session({ name: 'n', capabilities: ['ledger'], newStore: () => new ArrayStorage() });
  s.answer({ id: 0, op: 'hello', args: { protocol: 1 } });
  s.answer({ id: 1, op: 'newStore' });
  const broken = archive(`{"companions":{"projections":"not an array"},"conversationId":"c","events":[${EVENT}],"format":"convledger.archive","formatVersion":1}`);
  const reply = s.answer(decode(encode({ id: 2, op: 'importConversation', args: { store: 1, archive: broken } })));
  assert.equal(kind(reply), 'not_supported');
  const { call } = session(); // declaring projections: judged (PRJ-041)
  assert.equal(kind(call('importConversation', { archive: broken })), 'invalid_input');
});

const definition = (name: string, fold: string, version = 1): { [k: string]: unknown } => ({
  name, version, fold, kinds: null, initialState: { count: 0, seqs: [] },
  stateSchema: { type: 'object', properties: { count: { type: 'integer' } } },
});

test('the schema judges the state a catch-up stores, not the ones in between (PRJ-054, conformance.detour)', () => {
  const { call } = session();
  call('append', { conversationId: 'c', drafts: [draft('a'), draft('b'), draft('c')] });
  const past = call('catchUp', { conversationId: 'c', definition: definition('d', 'conformance.detour') as never });
  assert.ok(past.ok, JSON.stringify(past.error));
  assert.deepEqual({ ...(past.ok as { state: object }).state }, { count: 3, seqs: [3] });
  const { call: other } = session();
  other('append', { conversationId: 'c', drafts: [draft('a'), draft('b'), draft('c')] });
  assert.equal(kind(other('catchUp', { conversationId: 'c', definition: definition('d', 'conformance.detour') as never, maxEvents: 2 })), 'invalid_input');
});

test('definitions handed to an import that repeat a name are refused, whatever their versions (PRJ-055)', () => {
  const { call } = session();
  const plain = archive(`{"companions":{},"conversationId":"c","events":[${EVENT}],"format":"convledger.archive","formatVersion":1}`);
  const twice = [definition('p', 'conformance.count', 1), definition('p', 'conformance.count', 2)];
  assert.equal(kind(call('importConversation', { archive: plain, projections: twice as never })), 'invalid_input');
  assert.equal(call('head', { conversationId: 'c' }).ok, 0);
});
