// Node 20 lacks fs.globSync (added in Node 22). The published
// @modelcontextprotocol/conformance dist/index.js imports it from "fs".
// Rewrite that import so globSync comes from the `glob` package instead.
// Idempotent; fails loudly if the expected import is not found.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const pkgJson = require.resolve('@modelcontextprotocol/conformance/package.json');
const { version } = JSON.parse(readFileSync(pkgJson, 'utf8'));
const file = join(dirname(pkgJson), 'dist', 'index.js');
let src = readFileSync(file, 'utf8');

const MARK = '/*toolgate: globSync from glob*/';
if (src.includes(MARK)) {
  console.log(`conformance ${version}: already patched (${file})`);
  process.exit(0);
}

// e.g. import{existsSync as i,globSync as a,mkdtempSync as o,...}from"fs";
const re = /import\{([^}]*)\}from"(node:)?fs";/;
const m = src.match(re);
if (!m) throw new Error(`no import from "fs" found in ${file}`);
const specs = m[1].split(',');
const idx = specs.findIndex((s) => /^\s*globSync(\s+as\s+[\w$]+)?\s*$/.test(s));
if (idx < 0) {
  console.log(`conformance ${version}: no globSync import from fs; nothing to do`);
  process.exit(0);
}
const globSpec = specs.splice(idx, 1)[0].trim();
const fsImport = specs.length ? `import{${specs.join(',')}}from"${m[2] ?? ''}fs";` : '';
const replacement = `${fsImport}${MARK}import{${globSpec}}from"glob";`;
src = src.replace(re, replacement);
writeFileSync(file, src);
console.log(`conformance ${version}: patched ${file}: {${globSpec}} now from "glob"`);
