// The kind registry stays in spec/ (its source): the build copies spec/schemas/kinds.json into
// schemas/, which the package ships; test/session.test.ts checks the copy equals the spec's file.
// It also compiles every payload schema with Ajv (draft 2020-12, strict mode, the options of
// src/kinds.ts) into schemas/kinds.validators.cjs (Ajv's standalone code), so a kit process
// compiles nothing when it starts: KindRegistry.shipped() loads the validators and checks that
// they were made from the bytes of kinds.json it loads (their sha256).
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Ajv2020 } from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const source = join(here, '..', '..', 'spec', 'schemas', 'kinds.json');
if (!existsSync(source)) {
  console.error(`copy-schemas: ${source} is missing (build inside the convledger checkout)`);
  process.exit(1);
}
mkdirSync(join(here, 'schemas'), { recursive: true });
copyFileSync(source, join(here, 'schemas', 'kinds.json'));

// The options of PAYLOAD_AJV_OPTIONS in src/kinds.ts (test/kinds.test.ts checks they agree).
const OPTIONS = { strict: true, strictRequired: false, validateFormats: false, allErrors: false };
const bytes = readFileSync(source);
const ajv = new Ajv2020({ ...OPTIONS, code: { source: true, esm: false } });
const exports = {};
JSON.parse(bytes.toString('utf8')).kinds.forEach((entry, index) => {
  ajv.addSchema(entry.payloadSchema, `urn:convledger:kind:${index}`);
  exports[`k${index}`] = `urn:convledger:kind:${index}`;
});
const digest = createHash('sha256').update(bytes).digest('hex');
writeFileSync(join(here, 'schemas', 'kinds.validators.cjs'),
  `${standaloneCode(ajv, exports)}\nmodule.exports.kindsSha256 = ${JSON.stringify(digest)};\nmodule.exports.options = ${JSON.stringify(OPTIONS)};\n`);
