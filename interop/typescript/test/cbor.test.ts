// Deterministic CBOR (WIR-002, WIR-003): the encodings RFC 8949 Appendix A gives, and refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IntegralFloat, MalformedFrame, decode, encode, type Encodable } from '@convledger/kit';

const hex = (value: Encodable): string => Buffer.from(encode(value)).toString('hex');
const bytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));

test('integers take their shortest form; beyond 64 bits a bignum (WIR-002, WIR-010)', () => {
  assert.equal(hex(0), '00');
  assert.equal(hex(23), '17');
  assert.equal(hex(24), '1818');
  assert.equal(hex(1000), '1903e8');
  assert.equal(hex(1000000), '1a000f4240');
  assert.equal(hex(-1), '20');
  assert.equal(hex(-1000), '3903e7');
  assert.equal(hex(2 ** 53 - 1), '1b001fffffffffffff');
  assert.equal(hex(18446744073709551615n), '1bffffffffffffffff');
  assert.equal(hex(18446744073709551616n), 'c249010000000000000000');
  assert.equal(hex(-18446744073709551617n), 'c349010000000000000000');
  assert.equal(decode(bytes('c249010000000000000000')), 18446744073709551616n);
});

test('floats take the shortest of half, single and double that keeps the value (WIR-002)', () => {
  assert.equal(hex(1.5), 'f93e00');
  assert.equal(hex(new IntegralFloat(1)), 'f93c00');
  assert.equal(hex(-0), 'f98000');
  assert.equal(hex(65504.5), 'fa477fe080');
  assert.equal(hex(100000.5), 'fa47c35040');
  assert.equal(hex(1.1), 'fb3ff199999999999a');
  assert.equal(hex(5.960464477539063e-8), 'f90001');
  assert.equal(hex(Infinity), 'f97c00');
  assert.equal(hex(NaN), 'f97e00');
  assert.equal(hex(1e300), 'fb7e37e43c8800759c');
});

test('a float that is integral decodes apart from an integer (CAN-017, WIR-011)', () => {
  const value = decode(bytes('f93c00'));
  assert.ok(value instanceof IntegralFloat);
  assert.equal(value.value, 1);
  assert.equal(decode(bytes('01')), 1);
  assert.equal(decode(bytes('fb3ff199999999999a')), 1.1);
});

test('map keys sort length-first, then bytewise (RFC 8949 4.2.3)', () => {
  assert.equal(hex({ aa: 1, b: 2, a: 3 }), 'a3616103616202626161' + '01');
  assert.equal(hex({ z: undefined, a: null }), 'a16161f6');
});

test('text, bytes, arrays round-trip', () => {
  const value = ['é', Uint8Array.of(1, 2), [true, false, null], { k: -5 }];
  const again = decode(encode(value)) as unknown[];
  assert.deepEqual(again.slice(0, 3), value.slice(0, 3));
  assert.deepEqual({ ...(again[3] as object) }, { k: -5 });
});

test('a repeated map key makes the frame malformed (WIR-047)', () => {
  assert.throws(() => decode(bytes('a2616101616102')), MalformedFrame);
});

test('a receiver refuses what WIR-003 leaves out', () => {
  for (const frame of ['9f01ff', 'd82001', 'f7', 'e0', '0101', '61', '62c328', 'c201']) {
    assert.throws(() => decode(bytes(frame)), MalformedFrame, frame);
  }
});
