// The kit's per-draft payload validation cost (KND-002, KND-003): KindRegistry.check on the
// example payload of every registered kind (accepted) and on the same payload with one member
// more, unknown to its schema (refused), N rounds each; CPU time (process.cpuUsage, user+sys).
//   npm run build && node scripts/bench-kinds.mjs [rounds]
import { checkDraft } from '../dist/src/envelope.js';
import { KindRegistry } from '../dist/src/kinds.js';

const EXAMPLES = [["child/spawned", 1, {"childConversationId": "c", "seedUptoSeq": 0, "budget": {}}], ["child/state", 1, {"parentConversationId": "p", "childConversationId": "c", "state": "lost"}], ["provider/message", 1, {"sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "message": {"role": "user"}}], ["provider/request", 1, {"runId": "r", "attempt": 1, "stepNumber": 0, "modelId": "m", "instructionsSha256": "0000000000000000000000000000000000000000000000000000000000000000", "messageShas": ["1111111111111111111111111111111111111111111111111111111111111111"], "bodySha256": "2222222222222222222222222222222222222222222222222222222222222222"}], ["provider/response", 1, {"runId": "r", "attempt": 1, "stepNumber": 0, "response": {"id": "x"}}], ["retry/scheduled", 1, {"attempt": 1, "delayMs": 0, "reason": ""}], ["retry/started", 1, {"attempt": 2}], ["runtime/baseline", 1, {"migratedAt": "2024-01-01T00:00:00Z", "head": {}, "messages": [], "runs": [], "admissions": []}], ["runtime/transition", 1, {"type": "interrupt", "input": {"runId": "r"}}], ["sandbox/probed", 1, {"result": "degraded", "required": ["git"], "missing": ["git"]}], ["schedule/cancelled", 1, {"id": "s"}], ["schedule/failed", 1, {"id": "s", "occurrence": 1, "message": "", "attempts": 3, "retryAt": null, "terminal": true}], ["schedule/fired", 1, {"id": "s", "occurrence": 1, "lateByMs": 0, "nextAt": null, "state": "done"}], ["schedule/late", 1, {"id": "s", "occurrence": 2, "lateByMs": 1}], ["schedule/set", 1, {"id": "s", "kind": "every", "nextAt": "2024-01-01T00:00:00.5+01:00"}], ["spill/created", 1, {"reference": "s", "bytes": 0, "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "mediaType": "text/plain"}], ["spill/deleted", 1, {"reference": "s", "bytes": 3, "reason": "expired"}], ["state/set", 1, {"name": "n", "version": 1, "value": [1.5, null], "actor": "a"}]];

const rounds = Number(process.argv[2] ?? 20000);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };

let t = cpu();
const registry = KindRegistry.shipped();
const startMs = cpu() - t;

const broken = EXAMPLES.map(([kind, version, payload]) => [kind, version, { ...payload, zzUnknown: 1 }]);
const run = (cases, expectOk) => {
  let n = 0;
  for (const [kind, version, payload] of cases) {
    try { registry.check(kind, version, payload); if (!expectOk) throw new Error(`${kind} accepted a broken payload`); }
    catch (error) { if (expectOk || error.kind !== 'invalid_input') throw error; }
    n += 1;
  }
  return n;
};
run(EXAMPLES, true); run(broken, false); // warm up (and the first-use compile, if any)
const measure = (cases, expectOk) => {
  let n = 0;
  const start = cpu();
  for (let i = 0; i < rounds; i++) n += run(cases, expectOk);
  return ((cpu() - start) * 1e3) / n; // microseconds per check
};
const drafts = EXAMPLES.map(([kind, version, payload], i) => ({ schemaVersion: version, eventId: `e${i}`, kind, occurredAt: '2024-01-01T00:00:00Z', payload, ignorable: false }));
const draftLoop = (times, payloads) => {
  for (let i = 0; i < times; i++) for (const draft of drafts) { const d = checkDraft(draft); if (payloads) registry.check(d.kind, d.schemaVersion, d.payload); }
  return times * drafts.length;
};
const draftUs = (payloads) => { // the whole per-draft check of an append: the draft (ENV, LIM), then its payload
  draftLoop(2000, payloads); // warm up this loop
  const start = cpu();
  const n = draftLoop(rounds, payloads);
  return ((cpu() - start) * 1e3) / n;
};
const perKind = (name) => measure(EXAMPLES.filter(([k]) => k === name), true);
console.log(JSON.stringify({
  rounds,
  registryStartMs: Number(startMs.toFixed(1)),
  acceptedUsPerCheck: Number(measure(EXAMPLES, true).toFixed(3)),
  refusedUsPerCheck: Number(measure(broken, false).toFixed(3)),
  providerMessageUs: Number(perKind('provider/message').toFixed(3)),
  runtimeTransitionUs: Number(perKind('runtime/transition').toFixed(3)),
  draftWithoutPayloadUs: Number(draftUs(false).toFixed(3)),
  wholeDraftUs: Number(draftUs(true).toFixed(3)),
}));
