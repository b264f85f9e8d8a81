// The comparison behind run.mjs, kept free of I/O but for readResults so it can be tested on fixtures
// (compare.test.mjs): per check, keyed `scenario:check-id`, what passes directly against the reference server
// and what passes through toolgate, against the committed list of known gaps.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const PASS = 'SUCCESS';

/** Check statuses of one `conformance server -o DIR` run: Map `scenario:check-id` -> status. A check id seen
 * twice in one scenario gets `#2`, `#3`... A scenario the CLI's summary names but that wrote no checks.json
 * (it crashed) gets one `scenario:(no checks.json)` FAILURE. */
export function readResults(rawDir, stdout) {
  const scenarios = new Map();
  for (const d of existsSync(rawDir) ? readdirSync(rawDir).sort() : []) {
    const f = join(rawDir, d, 'checks.json');
    if (!existsSync(f)) continue;
    // server-<scenario>-<ISO stamp with : and . as ->
    const scenario = d.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/, '');
    scenarios.set(scenario, JSON.parse(readFileSync(f, 'utf8')));
  }
  for (const m of stdout.matchAll(/^[✓✗] (\S+): \d+ passed, \d+ failed$/gm))
    if (!scenarios.has(m[1])) scenarios.set(m[1], [{ id: '(no checks.json)', status: 'FAILURE' }]);
  return statusMap(scenarios);
}

/** Map scenario -> checks array (checks.json's shape) into Map `scenario:id` -> status. */
export function statusMap(scenarios) {
  const out = new Map();
  for (const [scenario, checks] of scenarios) {
    const seen = new Map();
    for (const c of checks) {
      const n = (seen.get(c.id) ?? 0) + 1;
      seen.set(c.id, n);
      out.set(`${scenario}:${c.id}${n > 1 ? `#${n}` : ''}`, c.status);
    }
  }
  return out;
}

/** known-gaps.txt: `VERSION scenario:check reason...` a line; `#` comments and blank lines skipped.
 * Returns { gaps: [{version, id, reason, line}], errors: [text] }. */
export function parseKnownGaps(text, versions) {
  const gaps = [];
  const errors = [];
  const seen = new Set();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = line.match(/^(\S+)\s+(\S+:\S+)\s+(\S.*)$/);
    if (!m) return errors.push(`line ${i + 1}: want "VERSION scenario:check reason", got: ${line}`);
    const [, version, id, reason] = m;
    if (!versions.includes(version)) return errors.push(`line ${i + 1}: version ${version} is not run (${versions.join(', ')})`);
    const key = `${version} ${id}`;
    if (seen.has(key)) return errors.push(`line ${i + 1}: ${key} listed twice`);
    seen.add(key);
    gaps.push({ version, id, reason, line: i + 1 });
  });
  return { gaps, errors };
}

/** One version's comparison. direct, through: Maps from readResults; known: that version's known gaps.
 *  gaps: pass directly, fail or are absent through toolgate.
 *  unexpected: gaps not listed (a regression, or a new check).
 *  fixed: listed, and now pass through toolgate (delete the line).
 *  notDirect: listed, and no longer pass directly (the suite or the reference server changed).
 *  onlyThrough: fail or are absent directly and pass through toolgate (reported, not compared). */
export function compare(direct, through, known) {
  const listed = new Map(known.map((g) => [g.id, g]));
  const gaps = [...direct].filter(([id, st]) => st === PASS && through.get(id) !== PASS).map(([id]) => id);
  const throughStatus = (id) => through.get(id) ?? 'absent';
  return {
    gaps: gaps.map((id) => ({ id, through: throughStatus(id), reason: listed.get(id)?.reason })),
    unexpected: gaps.filter((id) => !listed.has(id)).map((id) => ({ id, through: throughStatus(id) })),
    fixed: known.filter((g) => direct.get(g.id) === PASS && through.get(g.id) === PASS),
    notDirect: known.filter((g) => direct.get(g.id) !== PASS).map((g) => ({ ...g, direct: direct.get(g.id) ?? 'absent' })),
    onlyThrough: [...through].filter(([id, st]) => st === PASS && direct.get(id) !== PASS).map(([id]) => id),
  };
}

/** passed / failed / total of a run, counted as the CLI does (passed = SUCCESS, failed = FAILURE). */
export function counts(results) {
  const s = [...results.values()];
  return { passed: s.filter((x) => x === PASS).length, failed: s.filter((x) => x === 'FAILURE').length, total: s.length };
}
