// Deterministic CBOR of chapter WIR (WIR-001 .. WIR-003, WIR-010, WIR-011).

/** A CBOR float whose value is integral: kept apart from integers (CAN-017, WIR-011). */
export class IntegralFloat {
  constructor(readonly value: number) {}
}

/** A CBOR map with a key that is not text: no JSON object; the store refuses it (CAN-007). */
export class ForeignMap {
  /** The members whose keys are text, so that a request frame's `id` can still be read (WIR-004). */
  constructor(readonly textMembers: { readonly [key: string]: CborValue } = {}) {}
}

/** What a frame decodes to. Integers beyond +-(2^53-1) are BigInts (WIR-010). */
export type CborValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | IntegralFloat
  | ForeignMap
  | CborValue[]
  | { [key: string]: CborValue };

/** What the encoder takes: a decoded value, or `undefined` members, which it leaves out. */
export type Encodable =
  | CborValue
  | undefined
  | readonly Encodable[]
  | { readonly [key: string]: Encodable };

/** A frame that is not well-formed CBOR of the protocol (WIR-003, WIR-004). */
export class MalformedFrame extends Error {}

/** WIR-048: the frame's own map is level 1; no data item deeper than level 300. */
export const MAX_NESTING = 300;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function integer(big: bigint): number | bigint {
  return big >= -MAX_SAFE && big <= MAX_SAFE ? Number(big) : big;
}

function float(x: number): number | IntegralFloat {
  return Number.isInteger(x) ? new IntegralFloat(x) : x;
}

/** The identity of a map key that is not text: its deterministic encoding (WIR-047). */
function foreignKey(key: CborValue, index: number): string {
  try {
    return `o${Buffer.from(encode(key)).toString('latin1')}`;
  } catch {
    return `x${index}`; // a key holding a map with a non-text key: compared as distinct
  }
}

/** Decode one frame body: exactly one CBOR item of WIR-003, nothing after it. */
export function decode(body: Uint8Array): CborValue {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let pos = 0;
  const need = (n: number): void => {
    if (pos + n > body.length) throw new MalformedFrame('the frame ends inside a CBOR item');
  };
  const item = (depth: number): CborValue => {
    // the item at `depth` lies at level depth + 1 (WIR-048)
    if (depth >= MAX_NESTING) throw new MalformedFrame(`the frame nests deeper than ${MAX_NESTING} levels (WIR-048)`);
    need(1);
    const initial = body[pos++] as number;
    const major = initial >> 5;
    const info = initial & 0x1f;
    let arg: number | bigint;
    if (info < 24) arg = info;
    else if (info === 24) { need(1); arg = view.getUint8(pos); pos += 1; }
    else if (info === 25) { need(2); arg = view.getUint16(pos); pos += 2; }
    else if (info === 26) { need(4); arg = view.getUint32(pos); pos += 4; }
    else if (info === 27) { need(8); arg = view.getBigUint64(pos); pos += 8; }
    else throw new MalformedFrame('indefinite lengths and reserved values are not part of the protocol (WIR-003)');
    const count = (): number => {
      const n = Number(arg);
      if (!Number.isSafeInteger(n) || n > body.length) throw new MalformedFrame('a length beyond the frame');
      return n;
    };
    switch (major) {
      case 0: return integer(BigInt(arg));
      case 1: return integer(-1n - BigInt(arg));
      case 2: { const n = count(); need(n); const b = new Uint8Array(body.subarray(pos, pos + n)); pos += n; return b; }
      case 3: {
        const n = count(); need(n);
        let text: string;
        try { text = utf8.decode(body.subarray(pos, pos + n)); } catch { throw new MalformedFrame('text that is not UTF-8'); }
        pos += n;
        return text;
      }
      case 4: {
        const n = count();
        const out: CborValue[] = [];
        for (let i = 0; i < n; i++) out.push(item(depth + 1));
        return out;
      }
      case 5: {
        const n = count();
        const out: { [key: string]: CborValue } = Object.create(null) as { [key: string]: CborValue };
        let foreign = false;
        const keys = new Set<string>();
        for (let i = 0; i < n; i++) {
          const key = item(depth + 1);
          // WIR-047: a key that occurs twice makes the frame malformed. Text keys are the same
          // key when their text is; any other key when its deterministic encoding is.
          const identity = typeof key === 'string' ? `t${key}` : foreignKey(key, i);
          if (keys.has(identity)) throw new MalformedFrame('a CBOR map holds the same key twice (WIR-047)');
          keys.add(identity);
          const value = item(depth + 1);
          if (typeof key !== 'string') { foreign = true; continue; }
          Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
        }
        return foreign ? new ForeignMap(out) : out;
      }
      case 6: {
        if (arg !== 2 && arg !== 3) throw new MalformedFrame(`CBOR tag ${String(arg)} is not part of the protocol (WIR-003)`);
        need(1);
        if ((body[pos] as number) >> 5 !== 2) throw new MalformedFrame('a bignum tag without a byte string');
        const bytes = item(depth + 1) as Uint8Array;
        // linear in the bignum's length (an integer of 10^5 digits, WIR-049), not a shift per byte
        const magnitude = bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
        return integer(arg === 2 ? magnitude : -1n - magnitude);
      }
      default: {
        if (info === 20) return false;
        if (info === 21) return true;
        if (info === 22) return null;
        if (info === 25) return float(halfToNumber(Number(arg)));
        if (info === 26) { const v = new DataView(new ArrayBuffer(4)); v.setUint32(0, Number(arg)); return float(v.getFloat32(0)); }
        if (info === 27) { const v = new DataView(new ArrayBuffer(8)); v.setBigUint64(0, BigInt(arg)); return float(v.getFloat64(0)); }
        throw new MalformedFrame(`the simple value ${String(arg)} is not part of the protocol (WIR-003)`);
      }
    }
  };
  const value = item(0);
  if (pos !== body.length) throw new MalformedFrame('the frame holds bytes after its CBOR value');
  return value;
}

class Writer {
  private chunks: Uint8Array[] = [];
  size = 0;
  push(bytes: Uint8Array): void { this.chunks.push(bytes); this.size += bytes.length; }
  bytes(): Uint8Array { return Buffer.concat(this.chunks, this.size); }
}

function head(major: number, n: number | bigint): Uint8Array {
  const big = BigInt(n);
  const m = major << 5;
  if (big < 24n) return Uint8Array.of(m | Number(big));
  if (big < 0x100n) return Uint8Array.of(m | 24, Number(big));
  const out = new Uint8Array(big < 0x10000n ? 3 : big < 0x100000000n ? 5 : 9);
  const view = new DataView(out.buffer);
  if (out.length === 3) { out[0] = m | 25; view.setUint16(1, Number(big)); }
  else if (out.length === 5) { out[0] = m | 26; view.setUint32(1, Number(big)); }
  else { out[0] = m | 27; view.setBigUint64(1, big); }
  return out;
}

function numberToHalf(x: number): number {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x);
  const bits = v.getUint32(0);
  const sign = (bits >>> 16) & 0x8000;
  const exponent = ((bits >>> 23) & 0xff) - 127;
  const mantissa = bits & 0x7fffff;
  if (x === 0) return sign;
  if (exponent >= -14 && exponent <= 15) return sign | ((exponent + 15) << 10) | (mantissa >>> 13);
  if (exponent >= -24 && exponent < -14) return sign | ((mantissa | 0x800000) >>> (13 + (-14 - exponent)));
  return -1;
}

/** WIR-002: the shortest of half, single or double precision that denotes the same value. */
function encodeFloat(x: number): Uint8Array {
  if (Number.isNaN(x)) return Uint8Array.of(0xf9, 0x7e, 0x00);
  if (!Number.isFinite(x)) return Uint8Array.of(0xf9, x > 0 ? 0x7c : 0xfc, 0x00);
  if (Math.fround(x) === x) {
    const h = numberToHalf(x);
    if (h >= 0 && Object.is(halfToNumber(h), x)) return Uint8Array.of(0xf9, h >> 8, h & 0xff);
    const out = new Uint8Array(5); out[0] = 0xfa; new DataView(out.buffer).setFloat32(1, x); return out;
  }
  const out = new Uint8Array(9); out[0] = 0xfb; new DataView(out.buffer).setFloat64(1, x); return out;
}

const textEncoder = new TextEncoder();

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
}

function write(out: Writer, value: Encodable): void {
  if (value === null || value === undefined) { out.push(Uint8Array.of(0xf6)); return; }
  if (value === true) { out.push(Uint8Array.of(0xf5)); return; }
  if (value === false) { out.push(Uint8Array.of(0xf4)); return; }
  if (value instanceof IntegralFloat) { out.push(encodeFloat(value.value)); return; }
  if (typeof value === 'bigint') {
    const n = value >= 0n ? value : -1n - value;
    if (n < 1n << 64n) { out.push(head(value >= 0n ? 0 : 1, n)); return; }
    const hex = n.toString(16);
    const bytes = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
    out.push(Uint8Array.of(value >= 0n ? 0xc2 : 0xc3)); out.push(head(2, bytes.length)); out.push(bytes);
    return;
  }
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && !Object.is(value, -0)) {
      out.push(value >= 0 ? head(0, value) : head(1, -1 - value));
    } else {
      out.push(encodeFloat(value));
    }
    return;
  }
  if (typeof value === 'string') { const b = textEncoder.encode(value); out.push(head(3, b.length)); out.push(b); return; }
  if (value instanceof Uint8Array) { out.push(head(2, value.length)); out.push(value); return; }
  if (value instanceof ForeignMap) throw new TypeError('a map with a key that is not text has no encoding here');
  if (Array.isArray(value)) {
    out.push(head(4, value.length));
    for (const item of value as readonly Encodable[]) write(out, item);
    return;
  }
  const record = value as { readonly [key: string]: Encodable };
  const entries: [Uint8Array, Encodable][] = [];
  for (const key of Object.keys(record)) {
    if (record[key] === undefined) continue;
    const k = new Writer(); write(k, key);
    entries.push([k.bytes(), record[key]]);
  }
  entries.sort((a, b) => compareBytes(a[0], b[0])); // length-first, then bytewise (WIR-002)
  out.push(head(5, entries.length));
  for (const [key, item] of entries) { out.push(key); write(out, item); }
}

/** Deterministic CBOR (WIR-002): definite lengths, shortest forms, keys sorted length-first. */
export function encode(value: Encodable): Uint8Array {
  const out = new Writer();
  write(out, value);
  return out.bytes();
}
