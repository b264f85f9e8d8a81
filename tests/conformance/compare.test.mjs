// node --test tests/conformance/compare.test.mjs: the comparison run.mjs applies, on fixture results.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compare, counts, parseKnownGaps, statusMap } from './compare.mjs';

const V = ['2025-11-25', '2026-07-28'];
const ok = (id) => ({ id, status: 'SUCCESS' });
const bad = (id) => ({ id, status: 'FAILURE' });
const direct = statusMap(new Map([
  ['a', [ok('a'), ok('wire-schema-valid')]],
  ['b', [ok('b1'), ok('b2'), { id: 'b3', status: 'INFO' }]],
  ['c', [bad('c'), ok('c'), ok('c')]],
]));
const gaps = (text, version = '2025-11-25') => parseKnownGaps(text, V).gaps.filter((g) => g.version === version);

test('a check seen twice in a scenario is numbered', () => {
  assert.deepEqual([...direct.keys()].filter((k) => k.startsWith('c:')), ['c:c', 'c:c#2', 'c:c#3']);
  assert.deepEqual(counts(direct), { passed: 6, failed: 1, total: 8 });
});

test('same results through toolgate: no gaps', () => {
  const r = compare(direct, new Map(direct), []);
  assert.deepEqual([r.gaps, r.unexpected, r.fixed, r.notDirect, r.onlyThrough], [[], [], [], [], []]);
});

test('a failing or absent check is a gap, unexpected unless listed', () => {
  const through = new Map(direct);
  through.set('a:a', 'FAILURE');
  through.delete('b:b2');
  through.set('c:c', 'SUCCESS');
  const r = compare(direct, through, gaps('2025-11-25 a:a the door lacks a\n'));
  assert.deepEqual(r.gaps.map((g) => [g.id, g.through, g.reason]), [['a:a', 'FAILURE', 'the door lacks a'], ['b:b2', 'absent', undefined]]);
  assert.deepEqual(r.unexpected, [{ id: 'b:b2', through: 'absent' }]);
  assert.deepEqual(r.onlyThrough, ['c:c']);
});

test('a listed gap that passes through toolgate, or no longer passes directly, is reported', () => {
  const known = gaps('# comment\n\n2025-11-25 a:a fixed since\n2025-11-25 c:c fails directly\n2025-11-25 d:d gone\n');
  const r = compare(direct, new Map(direct), known);
  assert.deepEqual(r.fixed.map((g) => [g.id, g.line]), [['a:a', 3]]);
  assert.deepEqual(r.notDirect.map((g) => [g.id, g.direct]), [['c:c', 'FAILURE'], ['d:d', 'absent']]);
});

test('known gaps are per version', () => {
  assert.deepEqual(gaps('2026-07-28 a:a only at 2026\n'), []);
  assert.equal(gaps('2026-07-28 a:a only at 2026\n', '2026-07-28').length, 1);
});

test('a malformed, duplicated or unknown-version line is an error', () => {
  const { errors } = parseKnownGaps('2025-11-25 a:a reason\n2025-11-25 a:a again\n2025-11-25 noreason:x\n1999-01-01 a:a old\nfoo\n', V);
  assert.equal(errors.length, 4);
  assert.match(errors[0], /line 2: .* listed twice/);
  assert.match(errors[2], /line 4: version 1999-01-01 is not run/);
});
