// The kind registry stays in spec/ (its source): the build copies spec/schemas/kinds.json into
// schemas/, which the package ships; test/schemas.test.ts checks the copy equals the spec's file.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const source = join(here, '..', '..', 'spec', 'schemas', 'kinds.json');
if (!existsSync(source)) {
  console.error(`copy-schemas: ${source} is missing (build inside the convledger checkout)`);
  process.exit(1);
}
mkdirSync(join(here, 'schemas'), { recursive: true });
copyFileSync(source, join(here, 'schemas', 'kinds.json'));
