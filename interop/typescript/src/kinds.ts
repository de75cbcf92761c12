// The kind registry (chapter KND): schemas/kinds.json, copied from spec/schemas at build time.
//
// Payloads are validated by Ajv (JSON Schema draft 2020-12, strict mode). The shipped registry's
// validators are compiled once, at build time (scripts/copy-schemas.mjs writes Ajv's standalone
// code to schemas/kinds.validators.cjs), so a kit process compiles no schema when it starts; a
// registry of another document compiles its schemas when it is built. Ajv reads a `pattern` as ECMA-262 with the `u`
// flag (KND-005); the spec's patterns keep to the portable subset of KND-006, which Python's
// `re` reads alike, so the kit and the reference evaluate the same text unchanged, and the
// schemas use no keyword where Ajv and Python's jsonschema could differ (KND-007).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { Ajv2020, type Options, type ValidateFunction } from 'ajv/dist/2020.js';

import { invalid } from './errors.js';

/**
 * The Ajv options of payload schemas. Strict mode, except `strictRequired`: kinds.json writes
 * `{"if": ..., "then": {"required": ["policy"]}}` under the object whose `properties` define
 * `policy`, a 2020-12 idiom strictRequired flags although the member is defined. Formats are
 * not asserted (the schemas have none, KND-007); one error is enough (the refusal names none).
 */
export const PAYLOAD_AJV_OPTIONS: Readonly<Options> = Object.freeze({
  strict: true,
  strictRequired: false,
  validateFormats: false,
  allErrors: false,
});

/** kinds.json's entries by `schemaVersion kind`, each a compiled Ajv validator. */
export class KindRegistry {
  private readonly table: Map<string, ValidateFunction>;

  /**
   * Compiles every payload schema of `document` (a kinds.json document); throws on a bad one.
   * With `compiled` (validators by entry, in the order of `kinds`), compiles nothing.
   */
  constructor(document: unknown, compiled?: readonly ValidateFunction[]) {
    const kinds = (document as { kinds?: unknown } | null)?.kinds;
    if (!Array.isArray(kinds)) throw new TypeError('kinds.json has no array `kinds`');
    if (compiled !== undefined && compiled.length !== kinds.length) throw new TypeError('one compiled validator per entry of kinds');
    const ajv = compiled === undefined ? new Ajv2020({ ...PAYLOAD_AJV_OPTIONS }) : undefined;
    this.table = new Map();
    (kinds as { kind: string; schemaVersion: number; payloadSchema: object }[]).forEach((entry, index) => {
      const key = `${entry.schemaVersion} ${entry.kind}`;
      if (this.table.has(key)) throw new TypeError(`${entry.kind} v${entry.schemaVersion} registered twice`);
      this.table.set(key, ajv === undefined ? compiled?.[index] as ValidateFunction : ajv.compile(entry.payloadSchema));
    });
  }

  private static shippedRegistry: KindRegistry | undefined;

  /**
   * The registry shipped with the kit (the spec version hello announces, WIR-022), built once,
   * from the validators the build compiled; they must have been made from these very bytes.
   */
  static shipped(): KindRegistry {
    if (KindRegistry.shippedRegistry === undefined) {
      const bytes = readFileSync(fileURLToPath(new URL('../../schemas/kinds.json', import.meta.url)));
      const made = createRequire(import.meta.url)('../../schemas/kinds.validators.cjs') as { [name: string]: unknown };
      if (made.kindsSha256 !== createHash('sha256').update(bytes).digest('hex')) {
        throw new Error('schemas/kinds.validators.cjs was not compiled from schemas/kinds.json: run npm run build');
      }
      const document = JSON.parse(bytes.toString('utf8')) as { kinds: unknown[] };
      KindRegistry.shippedRegistry = new KindRegistry(document, document.kinds.map((_, index) => made[`k${index}`] as ValidateFunction));
    }
    return KindRegistry.shippedRegistry;
  }

  static fromFile(path: string): KindRegistry {
    return new KindRegistry(JSON.parse(readFileSync(path, 'utf8')) as unknown);
  }

  has(kind: string, schemaVersion: number): boolean {
    return this.table.has(`${schemaVersion} ${kind}`);
  }

  /** KND-002, KND-003: refuse a kind that is not registered or a payload its schema rejects. */
  check(kind: string, schemaVersion: number, payload: unknown): void {
    const validate = this.table.get(`${schemaVersion} ${kind}`);
    if (validate === undefined) throw invalid(`kind ${kind} v${schemaVersion} is not registered`, 'KND-002', 'kind');
    if (!validate(payload)) {
      const error = validate.errors?.[0];
      const where = error === undefined ? '' : ` at ${error.instancePath || '(root)'}: ${error.message ?? error.keyword}`;
      throw invalid(`the payload breaks the schema of ${kind} v${schemaVersion}${where}`, 'KND-003', 'payload');
    }
  }
}
