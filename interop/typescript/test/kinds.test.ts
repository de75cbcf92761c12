// The kind registry through Ajv (KND-002, KND-003, KND-005, KND-006, KND-007) and the kit's own
// envelope checks held against spec/schemas/envelope.schema.json, also through Ajv.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { KindRegistry, PAYLOAD_AJV_OPTIONS, Refusal, checkEnvelope } from '@convledger/kit';
import { SPEC } from './support.js';

const registry = KindRegistry.shipped();
const SHA = '0123456789abcdef'.repeat(4);
const AT = '2024-01-01T00:00:00Z';

function refusal(run: () => void): { kind: string; requirement: string | undefined; field: string | undefined } | null {
  try { run(); return null; } catch (error) {
    assert.ok(error instanceof Refusal, String(error));
    return { kind: error.kind, requirement: error.requirement, field: error.details.field };
  }
}

const created = (sha: string) => ({ reference: 'r', bytes: 1, sha256: sha, mediaType: 'text/plain' });
const scheduled = (at: string) => ({ id: 's', kind: 'at', nextAt: at });
const digits = (zero: number) => AT.replace(/[0-9]/g, (d) => String.fromCodePoint(zero + Number(d)));

test('the shipped registry is built once, every schema compiled by Ajv in strict mode', () => {
  assert.equal(KindRegistry.shipped(), registry);
  assert.equal(PAYLOAD_AJV_OPTIONS.strict, true);
  assert.ok(registry.has('spill/created', 1) && !registry.has('spill/created', 2));
  // the build compiled the shipped validators with the same options
  const made = createRequire(import.meta.url)('../../schemas/kinds.validators.cjs') as { options: object };
  assert.deepEqual(made.options, { ...PAYLOAD_AJV_OPTIONS });
  // a registry compiled now judges as the shipped one does
  const now = KindRegistry.fromFile(join(SPEC, 'schemas', 'kinds.json'));
  for (const payload of [created(SHA), created(`${SHA}\n`), { ...created(SHA), more: 1 }]) {
    assert.deepEqual(refusal(() => now.check('spill/created', 1, payload)), refusal(() => registry.check('spill/created', 1, payload)));
  }
  // strict mode: an unknown keyword in a payload schema is a build error, not ignored
  assert.throws(() => new KindRegistry({ kinds: [{ kind: 'x/y', schemaVersion: 1, payloadSchema: { tyep: 'object' } }] }), /strict mode/);
});

test('KND-002, KND-003: the refusals and their details are the reference\'s', () => {
  assert.deepEqual(refusal(() => registry.check('no/such', 1, {})), { kind: 'invalid_input', requirement: 'KND-002', field: 'kind' });
  assert.deepEqual(refusal(() => registry.check('spill/created', 1, { ...created(SHA), more: 1 })), { kind: 'invalid_input', requirement: 'KND-003', field: 'payload' });
  assert.equal(refusal(() => registry.check('spill/created', 1, created(SHA))), null);
});

test('KND-005, KND-006: the end is the end of the string, a digit is [0-9], also for astral digits', () => {
  for (const sha of [`${SHA}\n`, `${SHA}\r\n`, ` ${SHA}`, '\u0661'.repeat(64)]) {
    assert.equal(refusal(() => registry.check('spill/created', 1, created(sha)))?.requirement, 'KND-003', JSON.stringify(sha));
  }
  for (const at of [`${AT}\n`, digits(0x660), digits(0xff10), digits(0x1d7ce), `${AT}\u{1F600}`]) {
    assert.equal(refusal(() => registry.check('schedule/set', 1, scheduled(at)))?.requirement, 'KND-003', JSON.stringify(at));
  }
  assert.equal(refusal(() => registry.check('schedule/set', 1, scheduled('2024-01-01T00:00:00.123+01:00'))), null);
});

test('KND-007: an integer at or beyond 2**53 breaks a bound of 2**53-1; minLength counts code points', () => {
  for (const attempt of [2 ** 53, 1e16, -(2 ** 53), 0, 1.5]) {
    assert.equal(refusal(() => registry.check('retry/started', 1, { attempt }))?.requirement, 'KND-003', String(attempt));
  }
  assert.equal(refusal(() => registry.check('retry/started', 1, { attempt: 2 ** 53 - 1 })), null);
  assert.equal(refusal(() => registry.check('schedule/cancelled', 1, { id: '\u{1F600}' })), null);
  assert.equal(refusal(() => registry.check('schedule/cancelled', 1, { id: '' }))?.requirement, 'KND-003');
});

// The envelope: the kit checks it member by member (the requirement ids and their order are the
// reference's), and what it accepts the schema accepts; what the schema refuses it refuses.
const envelopeSchema = JSON.parse(readFileSync(join(SPEC, 'schemas', 'envelope.schema.json'), 'utf8')) as object;
const schemaAccepts = new Ajv2020({ ...PAYLOAD_AJV_OPTIONS }).compile(envelopeSchema);

function envelopes(): unknown[] {
  const good = { schemaVersion: 1, eventId: 'e', conversationId: 'c', seq: 1, kind: 'state/set', occurredAt: AT, payload: { key: 'k', value: 1 } };
  const values: unknown[] = [undefined, null, true, 0, 1, -1, 1.5, 2 ** 53 - 1, 2 ** 53, '', 'x', '\u{1F600}', [], {}, AT, `${AT}\n`, digits(0x660), digits(0x1d7ce),
    '2024-02-30T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01T00:00:60+23:59', '2024-01-01t00:00:00.5z', '2024-01-01T00:00:00+24:00', '2024-1-01T00:00:00Z'];
  const out: unknown[] = [good, { ...good, ignorable: true }, { ...good, ignorable: false }, { ...good, extra: 1 }, null, [], 'x'];
  for (const name of [...Object.keys(good), 'ignorable']) {
    const { [name]: _dropped, ...rest } = good as { [k: string]: unknown };
    out.push(rest);
    for (const value of values) out.push({ ...good, [name]: value });
  }
  return out;
}

test('the kit\'s envelope checks never accept what envelope.schema.json (Ajv) refuses', () => {
  let accepted = 0;
  let refused = 0;
  for (const wire of envelopes()) {
    const kit = refusal(() => checkEnvelope(wire));
    const plain = wire === undefined ? wire : JSON.parse(JSON.stringify(wire)) as unknown;
    if (kit === null) { accepted += 1; assert.ok(schemaAccepts(plain), JSON.stringify(wire)); }
    else refused += 1;
    if (!schemaAccepts(plain)) assert.notEqual(kit, null, JSON.stringify(wire));
  }
  assert.ok(accepted > 10 && refused > 50, `${accepted} accepted, ${refused} refused`);
});
