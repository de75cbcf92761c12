// The callbacks of chapter WIR (WIR-030 .. WIR-034, WIR-043): an operation that must ask the
// client's callback returns an `Asking`; the session writes the callback frame, reads the
// client's callback reply and goes on with `then`, with no I/O of its own.

import type { Json } from './json.js';

/** The client's answer: exactly `ok: true` grants; `false` is any other answer, or a callback that raised (WIR-032). */
export type Granted = boolean;

/** An operation waiting for the client's `authorize(value)` (WIR-030). */
export class Asking {
  constructor(
    /** The callback's argument (a copy: the callback cannot change what the store keeps). */
    readonly value: Json,
    /** How the operation goes on; it may ask again. */
    readonly then: (granted: Granted) => unknown,
  ) {}
}
