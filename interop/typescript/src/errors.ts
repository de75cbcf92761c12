// The error kinds of chapter ERR and the `details` each carries over the wire (WIR-008, WIR-025).

/** The kinds of chapter ERR (ERR-001); the text of a message is never normative (ERR-002). */
export type ErrorKind =
  | 'invalid_input'
  | 'not_supported'
  | 'purged'
  | 'not_found'
  | 'conflict'
  | 'duplicate'
  | 'replay_refused'
  | 'unauthorized'
  | 'integrity'
  | 'unavailable';

/** The members of `details` by kind: the table under WIR-008 (WIR-025). */
export interface RefusalDetails {
  actual?: number;
  identity?: string;
  conversationId?: string;
  seq?: number;
  eventId?: string;
  schemaVersion?: number;
  eventKind?: string;
  capability?: string;
  field?: string;
}

/** A typed refusal: the store changed nothing (ERR-003); it travels as a wire `error`. */
export class Refusal extends Error {
  readonly kind: ErrorKind;
  readonly requirement: string | undefined;
  readonly details: RefusalDetails;

  constructor(kind: ErrorKind, message: string, requirement?: string, details: RefusalDetails = {}) {
    super(message);
    this.name = 'Refusal';
    this.kind = kind;
    this.requirement = requirement;
    this.details = details;
  }
}

/** `invalid_input`, naming the offending argument in `details.field` (not normative). */
export function invalid(message: string, requirement: string, field?: string): Refusal {
  return new Refusal('invalid_input', message, requirement, field === undefined ? {} : { field });
}

/** `conflict` of an expected head or an occupied import target: `details.actual` (ERR-005, ARC-009). */
export function conflict(actual: number, message: string, requirement: string): Refusal {
  return new Refusal('conflict', message, requirement, { actual });
}

/** `duplicate`: `details.identity` is the taken text (LED-003, ARC-010). */
export function duplicate(identity: string, requirement: string): Refusal {
  return new Refusal('duplicate', `the identity ${JSON.stringify(identity)} is taken`, requirement, { identity });
}

/** `purged`: every write to a purged conversation, forever (TRN-092). */
export function purged(conversationId: string): Refusal {
  return new Refusal('purged', `conversation ${JSON.stringify(conversationId)} was purged`, 'TRN-092', {
    conversationId,
  });
}

/** `not_supported` of an undeclared capability (CAP-002). */
export function notSupported(capability: string, message: string, requirement = 'CAP-002'): Refusal {
  return new Refusal('not_supported', message, requirement, { capability });
}

/**
 * A value as an error message shows it (WIR-049): an integer of more than 64 bits by its size,
 * never its full decimal form (which costs time quadratic in its length).
 */
export function shown(value: unknown): string {
  if (typeof value === 'bigint' && (value >= 1n << 64n || value < -(1n << 64n))) return `an integer of ${value.toString(16).length * 4} bits`;
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return String(value);
}
