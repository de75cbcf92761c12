// The wire protocol (chapter WIR): frames on stdin/stdout, hello, handles and dispatch.

import { type CborValue, type Encodable, ForeignMap, MalformedFrame, decode, encode } from './cbor.js';
import { Refusal, invalid, notSupported, shown } from './errors.js';
import { isObject } from './json.js';
import { KindRegistry } from './kinds.js';
import { Asking } from './callback.js';
import { type Args, Store } from './ledger.js';
import type { Storage, StoreFactory } from './storage.js';

export const PROTOCOL = 1;
export const SPEC_VERSION = '0.1';
export const MAX_FRAME = 256 * 1024 * 1024; // WIR-001

/** Every request type of the protocol's table and the capability that carries it (WIR-006). */
const CARRIED: ReadonlyMap<string, string> = new Map([
  ['append', 'ledger'], ['read', 'ledger'], ['head', 'ledger'],
  ['exportConversation', 'ledger'], ['importConversation', 'ledger'],
  ['transition', 'transitions'], ['loadRun', 'transitions'], ['listActiveRuns', 'transitions'],
  ['loadSnapshot', 'transitions'], ['scanRecoverable', 'transitions'], ['purge', 'purge'],
  ['putSpill', 'spills'], ['getSpill', 'spills'], ['deleteSpill', 'spills'],
  ['exportBundle', 'spills'], ['importBundle', 'spills'], ['search', 'search'],
  ['catchUp', 'projections'], ['loadCheckpoint', 'projections'], ['projectionStatus', 'projections'],
]);
const SERVED: ReadonlyMap<string, (store: Store, args: Args) => unknown> = new Map<string, (store: Store, args: Args) => unknown>([
  ['append', (s, a) => s.append(a)],
  ['read', (s, a) => s.read(a)],
  ['head', (s, a) => s.head(a)],
  ['exportConversation', (s, a) => s.exportConversation(a)],
  ['importConversation', (s, a) => s.importConversation(a)],
  ['purge', (s, a) => s.purge(a)],
  ['catchUp', (s, a) => s.catchUp(a)],
  ['loadCheckpoint', (s, a) => s.loadCheckpoint(a)],
  ['projectionStatus', (s, a) => s.projectionStatus(a)],
  ['putSpill', (s, a) => s.putSpill(a)],
  ['getSpill', (s, a) => s.getSpill(a)],
  ['deleteSpill', (s, a) => s.deleteSpill(a)],
  ['exportBundle', (s, a) => s.exportBundle(a)],
  ['importBundle', (s, a) => s.importBundle(a)],
  ['search', (s, a) => s.search(a)],
]);

/** A reply frame (WIR-005). */
export type Reply = { id: number | bigint | null; ok?: Encodable; error?: Encodable };
/** A callback frame (WIR-030, WIR-043). */
export type CallbackFrame = { callback: number; kind: 'authorize'; args: { value: Encodable } };
/** A frame the server writes. */
export type Outgoing = Reply | CallbackFrame;

/** A request whose operation waits for its client's callback reply. */
interface Pending {
  readonly id: number | bigint;
  readonly asking: Asking;
  readonly callback: number;
}

function isId(value: unknown): value is number | bigint {
  return (typeof value === 'number' && Number.isInteger(value) && value >= 0) || (typeof value === 'bigint' && value >= 0n && value < 1n << 64n);
}

/** A request answered, or waiting for its client's callback. */
type Outcome = { reply: Reply; id?: undefined; asking?: undefined } | { id: number | bigint; asking: Asking; reply?: undefined };

function refusalOut(error: Refusal): Encodable {
  const out: { [k: string]: Encodable } = { kind: error.kind, message: error.message, details: { ...error.details } };
  if (error.requirement !== undefined) out.requirement = error.requirement;
  return out;
}

/** One session: the stores by handle and the answers to requests (no I/O; see `serve`). */
export class Session {
  private readonly stores = new Map<number, Store>();
  private nextHandle = 1;
  private greeted = false;
  private pending: Pending | null = null;
  private readonly registry: KindRegistry;

  constructor(private readonly factory: StoreFactory, registry?: KindRegistry) {
    this.registry = registry ?? KindRegistry.shipped();
  }

  private capabilities(): string[] {
    return ['ledger', ...this.factory.capabilities.filter((c) => c !== 'ledger')].sort();
  }

  private register(store: Store): { store: number; capabilities: string[] } {
    const handle = this.nextHandle++;
    this.stores.set(handle, store);
    return { store: handle, capabilities: this.capabilities() };
  }

  private make(storage: Storage): Store {
    return new Store(storage, this.factory.capabilities, this.registry);
  }

  private dispatch(op: string, args: Args): unknown {
    if (op === 'hello') {
      // WIR-046: protocol is a CBOR integer (1.0 arrives as an IntegralFloat, true as a boolean);
      // WIR-006: another integer, of any size, is another version
      const offered = args.protocol;
      if (!(typeof offered === 'number' && Number.isInteger(offered)) && typeof offered !== 'bigint') throw invalid(`hello's protocol is an integer, not ${shown(offered)}`, 'WIR-046', 'protocol');
      if (offered !== PROTOCOL) throw new Refusal('not_supported', `protocol version ${shown(offered)} is not ${PROTOCOL}`, 'WIR-006', { capability: '' });
      this.greeted = true;
      const operations = [...CARRIED].filter(([name, capability]) => capability === 'ledger' || this.capabilities().includes(capability) && SERVED.has(name)).map(([name]) => name);
      if (this.factory.openStore !== undefined) operations.push('openStore');
      return { protocol: PROTOCOL, spec: SPEC_VERSION, server: this.factory.name, capabilities: this.capabilities(), operations: operations.sort() };
    }
    if (!this.greeted) throw invalid('the first request must be hello', 'WIR-006');
    if (op === 'newStore') return this.register(this.make(this.factory.newStore()));
    if (op === 'openStore') {
      if (this.factory.openStore === undefined) throw new Refusal('not_supported', 'this server keeps no persistent store', 'WIR-040', { capability: '' });
      if (typeof args.location !== 'string' || args.location === '') throw invalid('openStore needs a location (text)', 'WIR-040', 'location');
      return this.register(this.make(this.factory.openStore(args.location)));
    }
    const handle = args.store;
    const store = typeof handle === 'number' ? this.stores.get(handle) : undefined;
    if (store === undefined) throw invalid(`no open store has handle ${shown(handle)}`, 'WIR-020', 'store'); // WIR-049
    if (op === 'close') { this.stores.delete(handle as number); store.storage.close?.(); return null; }
    if (op === 'capabilities') return this.capabilities();
    if (op === 'reopen') {
      if (!store.capabilities.has('persistence') || store.storage.reopen === undefined) throw notSupported('persistence', 'reopen needs capability persistence');
      this.stores.delete(handle as number);
      return this.register(this.make(store.storage.reopen()));
    }
    const capability = CARRIED.get(op);
    if (capability === undefined) throw new Refusal('not_supported', `the protocol carries no request ${op}`, 'WIR-007', { capability: '' });
    const handler = SERVED.get(op);
    if (handler === undefined || !store.capabilities.has(capability as never)) throw notSupported(capability, `${op} needs capability ${capability}`);
    return handler(store, args);
  }

  /**
   * The reply to one decoded request frame (WIR-004 .. WIR-008); members besides id, op and args
   * are ignored (WIR-045). Without a channel for callbacks: a callback counts as raised (WIR-032).
   */
  answer(request: CborValue): Reply {
    const outcome = this.start(request);
    return outcome.asking === undefined ? outcome.reply : this.finish(outcome.id, outcome.asking);
  }

  /**
   * The frames to write for one decoded frame from the client: a request's reply, or a callback
   * frame while its operation waits for the client (WIR-030); a frame that arrives while a
   * callback is pending is its callback reply, or else the callback counts as raised and the
   * frame is answered `invalid_input` after the pending request's reply (WIR-033).
   */
  receive(frame: CborValue): Outgoing[] {
    const pending = this.pending;
    if (pending === null) return this.deliver(this.start(frame), 0);
    this.pending = null;
    const members = frame instanceof ForeignMap ? null : frame;
    if (isObject(members) && members.callbackReply === pending.callback && Object.keys(members).every((k) => ['callbackReply', 'ok', 'error'].includes(k)) && ('ok' in members) !== ('error' in members)) {
      return this.deliver(this.resume(pending.id, pending.asking, members.ok === true), pending.callback); // WIR-032
    }
    const strayId = isObject(members) && isId(members.id) ? members.id : null;
    const stray: Reply = { id: strayId, error: { kind: 'invalid_input', message: `a frame that is not the reply to callback ${pending.callback} arrived while it was pending`, requirement: 'WIR-033' } };
    return [this.finish(pending.id, pending.asking), stray];
  }

  /** The frames to write when a frame could not be read (`error`, WIR-004): while a callback is pending, it counts as raised (WIR-033). */
  unreadable(error: Reply): Outgoing[] {
    return [...this.end(), error];
  }

  /** The frames to write when the input ends: a pending request is answered, its callback raised (WIR-033). */
  end(): Outgoing[] {
    const pending = this.pending;
    if (pending === null) return [];
    this.pending = null;
    return [this.finish(pending.id, pending.asking)];
  }

  /** The reply of a request whose channel for callbacks is gone: every callback counts as raised. */
  private finish(id: number | bigint, asking: Asking): Reply {
    let outcome = this.resume(id, asking, false);
    while (outcome.asking !== undefined) outcome = this.resume(id, outcome.asking, false);
    return outcome.reply;
  }

  private deliver(outcome: Outcome, previous: number): Outgoing[] {
    if (outcome.asking === undefined) return [outcome.reply];
    const id = outcome.id;
    const callback = previous + 1; // WIR-043: 1, 2, 3, ... within the request
    this.pending = { id, asking: outcome.asking, callback };
    return [{ callback, kind: 'authorize', args: { value: outcome.asking.value as Encodable } }];
  }

  private start(request: CborValue): Outcome {
    // a member with a key that is not text is a member other than id, op and args: ignored (WIR-045)
    if (request instanceof ForeignMap) request = request.textMembers as CborValue;
    if (!isObject(request)) return { reply: { id: null, error: { kind: 'invalid_input', message: 'a frame holds a map', requirement: 'WIR-004' } } };
    const id = request.id;
    const given = 'args' in request ? request.args : {};
    const args = given instanceof ForeignMap ? given.textMembers : given; // WIR-026: unnamed members ignored
    if (!isId(id) || typeof request.op !== 'string' || !isObject(args)) {
      return { reply: { id: isId(id) ? id : null, error: { kind: 'invalid_input', message: 'a request is {id, op, args?}', requirement: 'WIR-004' } } };
    }
    const op = request.op;
    return this.settle(id, () => this.dispatch(op, args));
  }

  private resume(id: number | bigint, asking: Asking, granted: boolean): Outcome {
    return this.settle(id, () => asking.then(granted));
  }

  private settle(id: number | bigint, run: () => unknown): Outcome {
    try {
      const value = run();
      if (value instanceof Asking) return { id, asking: value };
      return { reply: { id, ok: value as Encodable } };
    } catch (error) {
      if (error instanceof Refusal) return { reply: { id, error: refusalOut(error) } };
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      return { reply: { id, error: { kind: 'internal', message: text } } };
    }
  }

  /** Close every open store (end of input). */
  closeAll(): void {
    for (const store of this.stores.values()) {
      try { store.storage.close?.(); } catch (error) { process.stderr.write(`closing a store failed: ${String(error)}\n`); }
    }
    this.stores.clear();
  }
}

function frame(reply: Outgoing): Uint8Array {
  let body: Uint8Array;
  try {
    body = encode(reply);
  } catch (error) { // a result without a CBOR image: internal (WIR-008)
    if ('callback' in reply) throw error;
    body = encode({ id: reply.id, error: { kind: 'internal', message: `unencodable result: ${String(error)}` } });
  }
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** Options of `serve`. */
export interface ServeOptions {
  /** The kind registry (default: the kinds.json shipped with the kit, WIR-022). */
  readonly registry?: KindRegistry;
  readonly input?: NodeJS.ReadableStream;
  readonly output?: NodeJS.WritableStream;
}

/**
 * Serve the wire protocol on stdin/stdout for the stores `factory` makes (WIR-001 .. WIR-042):
 * frames only on stdout (WIR-023), one reply per request in order (WIR-005), and each write
 * acknowledged only after the storage's hook returned (WIR-042).
 */
export function serve(factory: StoreFactory, options: ServeOptions = {}): Promise<void> {
  const session = new Session(factory, options.registry);
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const reply = (message: Outgoing): void => { output.write(frame(message)); };
  const replies = (messages: Outgoing[]): void => { for (const message of messages) reply(message); };
  let waiting: Buffer[] = [];
  let waitingBytes = 0;
  let needed = 4;
  return new Promise((resolve) => {
    input.on('data', (chunk: Buffer) => {
      waiting.push(chunk);
      waitingBytes += chunk.length;
      if (waitingBytes < needed) return;
      let pending = waiting.length === 1 ? (waiting[0] as Buffer) : Buffer.concat(waiting, waitingBytes);
      waiting = [];
      waitingBytes = 0;
      needed = 4;
      while (pending.length >= 4) {
        const size = pending.readUInt32BE(0);
        if (size > MAX_FRAME) { // the framing is lost (WIR-004)
          replies(session.unreadable({ id: null, error: { kind: 'invalid_input', message: 'a frame over the limit', requirement: 'WIR-004' } }));
          process.exitCode = 2;
          input.removeAllListeners('data');
          session.closeAll();
          if ('destroy' in input && typeof input.destroy === 'function') input.destroy();
          resolve();
          return;
        }
        if (pending.length < 4 + size) { needed = 4 + size; break; }
        const body = pending.subarray(4, 4 + size);
        pending = pending.subarray(4 + size);
        let request: CborValue;
        try {
          request = decode(body);
        } catch (error) {
          if (!(error instanceof MalformedFrame)) throw error;
          replies(session.unreadable({ id: null, error: { kind: 'invalid_input', message: error.message, requirement: 'WIR-004' } }));
          continue;
        }
        replies(session.receive(request));
      }
      if (pending.length) { waiting = [pending]; waitingBytes = pending.length; }
    });
    input.on('end', () => {
      if (waitingBytes) {
        replies(session.unreadable({ id: null, error: { kind: 'invalid_input', message: 'the input ended inside a frame', requirement: 'WIR-004' } }));
        process.exitCode = 2;
      } else {
        replies(session.end());
      }
      session.closeAll();
      resolve();
    });
  });
}
