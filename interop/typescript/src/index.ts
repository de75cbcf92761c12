// @convledger/kit: write a convledger store in TypeScript; the kit does the rest.
export { serve, Session, PROTOCOL, SPEC_VERSION, type ServeOptions, type Reply, type CallbackFrame, type Outgoing } from './server.js';
export { type Capability, type Checkpoint, type StoredState, type Change, type LedgerStorage, type PurgeStorage, type PersistentStorage, type SearchStorage, type Storage, type StoreFactory, type Conversation, type SpillMetadata, type SpillObject, type SpillState, arrayState, applied } from './storage.js';
export { type Definition, type Fold, FOLDS, BUILT_INS, definitionIn, checkName } from './projections.js';
export { Store, type Page, type ImportReport, type ProjectionStatus, type Args, MAX_BATCH, MAX_READ_LIMIT, DEFAULT_READ_LIMIT } from './ledger.js';
export { type Envelope, type Draft, checkDraft, checkEnvelope, checkOccurredAt, checkText, place } from './envelope.js';
export { Refusal, type ErrorKind, type RefusalDetails, invalid, conflict, duplicate, purged, notSupported } from './errors.js';
export { type Json, type DecodeReason, JsonRefusal, canonical, decodeStrict, toJson } from './json.js';
export { KindRegistry, PAYLOAD_AJV_OPTIONS } from './kinds.js';
export { encodeArchive, decodeArchive, type Archive } from './archive.js';
export { encode, decode, IntegralFloat, ForeignMap, MalformedFrame, type CborValue, type Encodable } from './cbor.js';
export { Asking, type Granted } from './callback.js';
export { MAX_SPILL_BYTES, MEDIA_TYPE, digest, encodeBundle, openBundle, spillProblem, spillsJson, liveSpills, type BundleContents } from './spills.js';
export { type Hit, fold, eventText, queryWords, pageOf, hitsOf } from './search.js';
