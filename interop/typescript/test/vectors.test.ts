// The spec's language-neutral vectors: canonical JSON (CAN) and ledger archives (ARC).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { JsonRefusal, canonical, decodeStrict } from '@convledger/kit';
import { SPEC, session } from './support.js';

interface CanonicalCase { name: string; input_base64: string; canonical_base64?: string; error?: { kind: string; reason: string } }
interface ArchiveCase { name: string; capabilities: string[]; archiveBase64: string; expect: { imported?: boolean; reexportIdentical?: boolean; error?: string } }

const canonicalCases = (JSON.parse(readFileSync(join(SPEC, 'vectors', 'canonical', 'cases.json'), 'utf8')) as { cases: CanonicalCase[] }).cases;
const archiveCases = (JSON.parse(readFileSync(join(SPEC, 'vectors', 'archives', 'cases.json'), 'utf8')) as { cases: ArchiveCase[] }).cases;

test('canonical JSON: every case of spec/vectors/canonical (CAN-001 .. CAN-016)', () => {
  assert.ok(canonicalCases.length > 100);
  for (const c of canonicalCases) {
    const input = Buffer.from(c.input_base64, 'base64');
    if (c.error !== undefined) {
      assert.throws(() => canonical(decodeStrict(input)), (e: unknown) => e instanceof JsonRefusal && e.reason === c.error?.reason && e.kind === 'invalid_input', c.name);
    } else {
      assert.equal(canonical(decodeStrict(input)), Buffer.from(c.canonical_base64 ?? '', 'base64').toString('utf8'), c.name);
    }
  }
});

test('archives: every ledger case of spec/vectors/archives imports or is refused with its kind', () => {
  const ledger = archiveCases.filter((c) => c.capabilities.every((cap) => cap === 'ledger'));
  assert.ok(ledger.length > 5);
  for (const c of ledger) {
    const { call } = session();
    const data = Buffer.from(c.archiveBase64, 'base64');
    const reply = call('importConversation', { archive: data });
    if (c.expect.error !== undefined) {
      assert.equal((reply.error as { kind: string } | undefined)?.kind, c.expect.error, c.name);
      continue;
    }
    const report = reply.ok as { conversationId: string };
    assert.ok(report, `${c.name}: ${JSON.stringify(reply.error)}`);
    const again = call('exportConversation', { conversationId: report.conversationId });
    assert.deepEqual(Buffer.from(again.ok as Uint8Array), data, c.name);
  }
});
