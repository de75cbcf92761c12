// Capability `projections` (chapter PRJ): definitions as they travel (WIR-018), the named folds,
// catch-up through the replay gate, and the `projections` companion of archives.

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

import { type Envelope, checkPositive, checkText } from './envelope.js';
import { Refusal, invalid } from './errors.js';
import { type Json, canonical, isObject } from './json.js';
import type { KindRegistry } from './kinds.js';
import type { Checkpoint, StoredState } from './storage.js';

export const MAX_NAME_CHARS = 200; // PRJ-001
export const DEFAULT_MAX_EVENTS = 10_000; // PRJ-011
export const MAX_EVENTS = 1_000_000; // PRJ-011
const PAGE = 1000;

/** A named fold (WIR-018): `(state, envelope, version) -> state`; it may change `state` in place. */
export type Fold = (state: Json, envelope: Envelope, version: number) => unknown;

/** A checked definition: its fold resolved by name (PRJ-001, PRJ-004). */
export interface Definition {
  readonly name: string;
  readonly version: number;
  readonly stateSchema: Json;
  readonly initialState: Json;
  readonly fold: Fold;
  /** The `kind schemaVersion` pairs the fold understands; null: every registered pair. */
  readonly kinds: ReadonlySet<string> | null;
  readonly validate: ValidateFunction;
}

function summary(state: Json, envelope: Envelope): Json { // PRJ-051
  const s = state as { events: number; byKind: { [k: string]: number }; firstOccurredAt: string | null; lastOccurredAt: string | null; head: number };
  s.byKind[envelope.kind] = (s.byKind[envelope.kind] ?? 0) + 1;
  s.events += 1;
  if (s.firstOccurredAt === null) s.firstOccurredAt = envelope.occurredAt;
  s.lastOccurredAt = envelope.occurredAt;
  s.head = envelope.seq;
  return state;
}

function stateSlots(state: Json, envelope: Envelope): Json { // PRJ-052
  if (envelope.kind !== 'state/set' || envelope.schemaVersion !== 1) return state;
  const payload = envelope.payload as { name: string; value: Json; version: Json; actor: Json };
  (state as { [k: string]: Json })[payload.name] = { value: payload.value, version: payload.version, actor: payload.actor, seq: envelope.seq };
  return state;
}

function failing(kind: 'raises' | 'set' | 'schema'): Fold {
  return (state, envelope) => {
    if (envelope.seq < 3) { (state as { [k: string]: Json }).count = envelope.seq; return state; }
    if (kind === 'raises') throw new Error('fold broke');
    if (kind === 'set') return new Set([1, 2]);
    return { count: 'not an integer', seqs: [] };
  };
}

/** The table of named folds of spec/wire.md (WIR-018). */
export const FOLDS: ReadonlyMap<string, Fold> = new Map<string, Fold>([
  ['convledger.summary', summary],
  ['convledger.state-slots', stateSlots],
  ['conformance.count', (state, envelope, version) => {
    const seqs = (state as { seqs: Json[] }).seqs;
    return { count: seqs.length + 1, seqs: [...seqs, envelope.seq * version] };
  }],
  ['conformance.fails-raises', failing('raises')],
  ['conformance.fails-set', failing('set')],
  ['conformance.fails-schema', failing('schema')],
  // PRJ-054: at seq 2 a state the schema rejects, replaced at every later seq by a valid one
  ['conformance.detour', (_state, envelope, version) => envelope.seq === 2
    ? { count: 'not an integer', seqs: [] }
    : { count: envelope.seq, seqs: [envelope.seq * version] }],
]);

const COUNT = { type: 'integer', minimum: 0 };
const TIME = { type: ['string', 'null'] };
/** The built-in definitions (PRJ-050 .. PRJ-052), as they travel. */
export const BUILT_INS: readonly { [member: string]: unknown }[] = [
  {
    name: 'convledger.summary', version: 1, fold: 'convledger.summary', kinds: null,
    stateSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object',
      required: ['byKind', 'events', 'firstOccurredAt', 'head', 'lastOccurredAt'],
      properties: { events: COUNT, byKind: { type: 'object', additionalProperties: COUNT }, firstOccurredAt: TIME, lastOccurredAt: TIME, head: COUNT },
      additionalProperties: false,
    },
    initialState: { events: 0, byKind: {}, firstOccurredAt: null, lastOccurredAt: null, head: 0 },
  },
  {
    name: 'convledger.state-slots', version: 1, fold: 'convledger.state-slots', kinds: null, initialState: {},
    stateSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object',
      additionalProperties: {
        type: 'object', required: ['actor', 'seq', 'value', 'version'], additionalProperties: false,
        properties: { value: {}, version: { type: 'integer', minimum: 1 }, actor: { type: 'string' }, seq: { type: 'integer', minimum: 1 } },
      },
    },
  },
];

const validators = new Map<string, ValidateFunction>();

/** PRJ-002: the compiled draft 2020-12 validator of a state schema (cached by its canonical text). */
function stateValidator(schema: unknown): ValidateFunction {
  if (!isObject(schema)) throw invalid('stateSchema must be a JSON Schema object', 'PRJ-002', 'state_schema');
  let key: string;
  try { key = canonical(schema, 'state_schema'); } catch { throw invalid('stateSchema is not JSON', 'PRJ-002', 'state_schema'); }
  let found = validators.get(key);
  if (found === undefined) {
    const plain = JSON.parse(key) as { [k: string]: Json };
    delete plain.$schema; // the dialect is 2020-12 whatever it names (as the reference's check_schema)
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
    try {
      if (!ajv.validateSchema(plain)) throw new Error('not a valid JSON Schema');
      found = ajv.compile(plain);
    } catch {
      throw invalid('stateSchema is not a valid JSON Schema', 'PRJ-002', 'state_schema');
    }
    validators.set(key, found);
  }
  return found;
}

/** The canonical JSON of a state its schema accepts, or `invalid_input` (PRJ-002, PRJ-033). */
function checkState(validate: ValidateFunction, state: unknown, field: string, requirement: string): Json {
  let text: string;
  try { text = canonical(state, field); } catch { throw invalid(`${field} is not JSON`, requirement, field); }
  const plain = JSON.parse(text) as Json;
  if (!validate(plain)) throw invalid(`${field} breaks its state schema`, requirement, field);
  return plain;
}

/** PRJ-001: a projection name. */
export function checkName(value: unknown): string {
  checkText(value, 'name', 'PRJ-001');
  if ([...value].length > MAX_NAME_CHARS) throw invalid(`a projection name has at most ${MAX_NAME_CHARS} characters`, 'PRJ-001', 'name');
  return value;
}

const MEMBERS = ['fold', 'initialState', 'kinds', 'name', 'stateSchema', 'version'];

/** A definition as it travels (WIR-018), checked (PRJ-001, PRJ-002, PRJ-004). */
export function definitionIn(value: unknown): Definition {
  if (!isObject(value) || Object.keys(value).sort().join() !== MEMBERS.join()) {
    throw invalid('a projection is {name, version, stateSchema, initialState, fold, kinds}', 'PRJ-001', 'definition');
  }
  const name = checkName(value.name);
  checkPositive(value.version, 'version', 'PRJ-001');
  const fold = typeof value.fold === 'string' ? FOLDS.get(value.fold) : undefined;
  if (fold === undefined) throw invalid('fold must name a fold of the table of named folds', 'PRJ-004', 'fold');
  let kinds: Set<string> | null = null;
  if (value.kinds !== null) {
    const pairs = value.kinds;
    const good = Array.isArray(pairs) && pairs.every((pair: unknown) => Array.isArray(pair) && pair.length === 2 &&
      typeof pair[0] === 'string' && pair[0] !== '' &&
      ((typeof pair[1] === 'number' && Number.isInteger(pair[1]) && pair[1] >= 1) || (typeof pair[1] === 'bigint' && pair[1] >= 1n)));
    if (!good) throw invalid('kinds is null or an array of [kind, schemaVersion] pairs', 'PRJ-001', 'kinds');
    kinds = new Set((pairs as [string, number | bigint][]).map(([kind, version]) => `${String(version)} ${kind}`));
  }
  const validate = stateValidator(value.stateSchema);
  const initialState = checkState(validate, value.initialState, 'initial_state', 'PRJ-002');
  return { name, version: value.version, stateSchema: value.stateSchema as Json, initialState, fold, kinds, validate };
}

/** PRJ-043, PRJ-055: the definitions handed to an import, by name (a repeated name, whatever the versions, is refused). */
export function definitionsIn(value: unknown): Map<string, Definition> {
  if (value === undefined) return new Map();
  if (!Array.isArray(value)) throw invalid('projections is an array of definitions', 'PRJ-043', 'projections');
  const found = new Map<string, Definition>();
  for (const item of value) {
    const definition = definitionIn(item);
    if (found.has(definition.name)) throw invalid(`projection ${definition.name} is given twice`, 'PRJ-055', 'projections');
    found.set(definition.name, definition);
  }
  return found;
}

const builtIns = (): Map<string, Definition> => new Map(BUILT_INS.map((d) => { const c = definitionIn(d); return [c.name, c]; }));

/** PRJ-030, PRJ-031: true to fold, false to skip; refuses an envelope it cannot skip. */
function understands(definition: Definition, registry: KindRegistry, envelope: Envelope): boolean {
  const known = definition.kinds === null ? registry.has(envelope.kind, envelope.schemaVersion) : definition.kinds.has(`${envelope.schemaVersion} ${envelope.kind}`);
  if (known) return true;
  if (envelope.ignorable === true) return false;
  throw new Refusal('replay_refused', `projection ${definition.name} cannot fold ${envelope.kind} v${envelope.schemaVersion} at seq ${envelope.seq}`, 'PRJ-031', {
    conversationId: envelope.conversationId, seq: envelope.seq, eventId: envelope.eventId,
    schemaVersion: envelope.schemaVersion, eventKind: envelope.kind,
  });
}

function fresh(state: Json): Json {
  return JSON.parse(JSON.stringify(state)) as Json;
}

/** Fold `events` into `state` through the gate (PRJ-030); a failing fold is PRJ-033. */
function foldEvents(definition: Definition, registry: KindRegistry, state: Json, events: readonly Envelope[]): Json {
  let current: unknown = state;
  for (const envelope of events) {
    if (!understands(definition, registry, envelope)) continue;
    try {
      current = definition.fold(current as Json, envelope, definition.version);
    } catch (error) {
      if (error instanceof Refusal) throw error;
      throw invalid(`the fold of ${definition.name} failed at seq ${envelope.seq}`, 'PRJ-033', 'fold');
    }
  }
  return current as Json;
}

/**
 * One catch-up inside the storage's atomic step (PRJ-011 .. PRJ-016, PRJ-020, PRJ-030 .. PRJ-033):
 * the checkpoint to return and, when it moved, to store.
 */
export function advance(definition: Definition, registry: KindRegistry, state: StoredState, maxEvents: number): { result: Checkpoint; store: boolean } {
  const stored = state.checkpoint(definition.name);
  const start = stored !== null && stored.version === definition.version
    ? stored
    : { name: definition.name, version: definition.version, uptoSeq: 0, state: definition.initialState };
  const target = Math.min(state.head, start.uptoSeq + maxEvents);
  let folded = fresh(start.state);
  let upto = start.uptoSeq;
  while (upto < target) {
    const page = state.read(upto + 1, null, Math.min(PAGE, target - upto));
    if (page.length === 0) break;
    folded = foldEvents(definition, registry, folded, page);
    upto = (page[page.length - 1] as Envelope).seq;
  }
  if (upto === start.uptoSeq && start === stored) return { result: stored, store: false };
  const checked = checkState(definition.validate, folded, 'state', 'PRJ-033');
  const result = { name: definition.name, version: definition.version, uptoSeq: upto, state: checked };
  if (upto > 0) return { result, store: true }; // PRJ-015: never a checkpoint at uptoSeq 0
  return { result: stored ?? result, store: false };
}

/** PRJ-040: the companion value, by name in code-point order. */
export function checkpointsJson(checkpoints: readonly Checkpoint[]): Checkpoint[] {
  return [...checkpoints].sort((a, b) => Buffer.compare(Buffer.from(a.name, 'utf8'), Buffer.from(b.name, 'utf8')))
    .map((c) => ({ name: c.name, version: c.version, uptoSeq: c.uptoSeq, state: c.state }));
}

function parseCheckpoints(value: unknown): Checkpoint[] { // PRJ-041
  const shape = (message: string): Refusal => invalid(message, 'PRJ-041', 'companions');
  if (!Array.isArray(value) || value.length === 0) throw shape('the projections companion is a non-empty array');
  const parsed = value.map((item: unknown) => {
    if (!isObject(item) || Object.keys(item).sort().join() !== 'name,state,uptoSeq,version') throw shape('a checkpoint is exactly {name, version, uptoSeq, state}');
    if (typeof item.name !== 'string' || item.name === '') throw shape('a checkpoint name is a non-empty string');
    for (const n of [item.version, item.uptoSeq]) if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw shape('version and uptoSeq are positive integers');
    return { name: item.name, version: item.version as number, uptoSeq: item.uptoSeq as number, state: item.state as Json };
  });
  if (canonical(checkpointsJson(parsed), 'companions') !== canonical(value, 'companions') || new Set(parsed.map((c) => c.name)).size !== parsed.length) {
    throw shape('checkpoint names are unique and in code-point order');
  }
  return parsed;
}

/**
 * The first reason the projections companion disagrees with the events (PRJ-041 .. PRJ-043), or
 * none. `given` null: only the built-ins are checked, others skipped (ERR-011 step 3); otherwise
 * every checkpoint needs its definition, built-in or given (step 6).
 */
export function projectionProblem(events: readonly Envelope[], companion: unknown, registry: KindRegistry, given: ReadonlyMap<string, Definition> | null): Checkpoint[] {
  const checkpoints = parseCheckpoints(companion);
  const head = events.length === 0 ? 0 : (events[events.length - 1] as Envelope).seq;
  const known = new Map([...builtIns(), ...(given ?? [])]);
  for (const checkpoint of checkpoints) {
    if (checkpoint.uptoSeq > head) throw new Refusal('integrity', `checkpoint ${checkpoint.name} claims seq ${checkpoint.uptoSeq}, the ledger ends at ${head}`, 'PRJ-042');
    const definition = known.get(checkpoint.name);
    if (definition === undefined || definition.version !== checkpoint.version) {
      if (given !== null) throw invalid(`no definition of ${checkpoint.name} v${checkpoint.version} to check it by`, 'PRJ-043', 'companions');
      continue;
    }
    let same: boolean;
    try {
      const folded = foldEvents(definition, registry, fresh(definition.initialState), events.filter((e) => e.seq <= checkpoint.uptoSeq));
      same = canonical(folded, 'state') === canonical(checkpoint.state, 'state');
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      throw new Refusal('integrity', `checkpoint ${checkpoint.name} cannot be folded from its ledger`, 'PRJ-042');
    }
    if (!same) throw new Refusal('integrity', `checkpoint ${checkpoint.name} differs from the fold of events 1..${checkpoint.uptoSeq}`, 'PRJ-042');
  }
  return checkpoints;
}
