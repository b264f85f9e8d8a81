// The official MCP conformance suite (@modelcontextprotocol/conformance, server side, `--suite active`) run for
// each protocol version against the vendored reference server directly and through toolgate's MCP front door;
// fails on a check that passes directly and not through toolgate unless known-gaps.txt lists it, on a listed gap
// that now passes through toolgate, and on a listed gap that no longer passes directly.
//
//   (cd tests/conformance && npm ci) && (cd tests/conformance/ref-server && npm ci)
//   TOOLGATE_BIN=target/debug/toolgate node tests/conformance/run.mjs
//
// Installs nothing. Results, logs and the generated config go to target/conformance/ (emptied first).
// The last line is `conformance: ...`, the summary .ci/run prints; the exit code is 0 only if nothing unexpected.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare, counts, parseKnownGaps, readResults } from './compare.mjs';

const VERSIONS = ['2025-11-25', '2026-07-28'];
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const out = join(root, 'target', 'conformance');
const bin = resolve(root, process.env.TOOLGATE_BIN ?? 'target/debug/toolgate');
const cli = join(here, 'node_modules', '.bin', 'conformance');
const tsx = join(here, 'ref-server', 'node_modules', '.bin', 'tsx');
const children = [];

function die(msg) {
  console.error(`conformance: ${msg}`);
  process.exit(2);
}
function stopAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) try { process.kill(-c.pid, 'SIGTERM'); } catch {}
}
process.on('exit', stopAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// A free port as tests/it/support::free_addr picks one: below the kernel's ephemeral range, a stretch per pid.
// Probed on 0.0.0.0 too: the reference server binds every interface.
const taken = new Set();
const bindable = (port, host) => new Promise((ok) => {
  const s = createServer().once('error', () => ok(false)).listen(port, host, () => s.close(() => ok(true)));
});
async function freePort() {
  const base = 10_000 + (process.pid % 110) * 200;
  for (let i = 0; i < 200; i++) {
    const port = base + ((i + 37) % 200); // off the start of the stretch the Rust suites count through
    if (!taken.has(port) && (await bindable(port, '127.0.0.1')) && (await bindable(port, '0.0.0.0'))) {
      taken.add(port);
      return port;
    }
  }
  die(`no free port in 127.0.0.1:${base}..${base + 200}`);
}

/** Starts a long-running child in its own process group, its output to `log`; resolves once `ready` matches. */
function start(name, cmd, args, opts, ready, log) {
  const child = spawn(cmd, args, { ...opts, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const file = createWriteStream(log);
  let text = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name} not ready in 60 s; see ${log}`)), 60_000);
    const on = (chunk) => {
      file.write(chunk);
      text += chunk;
      if (ready.test(text.replace(/\x1b\[[0-9;]*m/g, ''))) { clearTimeout(timer); ok(child); }
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('error', (e) => { clearTimeout(timer); fail(new Error(`${name}: ${e.message}`)); });
    child.once('exit', (code, sig) => { clearTimeout(timer); fail(new Error(`${name} exited (${code ?? sig}); see ${log}`)); });
  });
}

const listening = (port) => new Promise((ok) => {
  const s = connect(port, '127.0.0.1').once('connect', () => { s.destroy(); ok(true); }).once('error', () => ok(false));
});

/** One suite run; returns Map `scenario:check` -> status. */
function suite(url, version, dir) {
  mkdirSync(dir, { recursive: true });
  const args = ['server', '--url', url, '--suite', 'active', '--spec-version', version, '-o', join(dir, 'raw')];
  const r = spawnSync(cli, args, { encoding: 'utf8', timeout: 600_000, maxBuffer: 64 << 20 });
  if (r.error) die(`${cli} ${args.join(' ')}: ${r.error.message}`);
  const stdout = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
  writeFileSync(join(dir, 'stdout.txt'), stdout);
  writeFileSync(join(dir, 'stderr.txt'), r.stderr);
  const results = readResults(join(dir, 'raw'), stdout);
  writeFileSync(join(dir, 'statuses.json'), JSON.stringify(Object.fromEntries(results), null, 1));
  if (results.size === 0) die(`no results from ${url} at ${version} (exit ${r.status}); see ${dir}/stdout.txt, stderr.txt`);
  return results;
}

async function main() {
  for (const [what, path] of [['the suite (npm ci in tests/conformance)', cli], ['the reference server (npm ci in tests/conformance/ref-server)', tsx], ['TOOLGATE_BIN', bin]])
    if (!existsSync(path)) die(`${what}: ${path} is missing`);
  // Idempotent; covers an `npm ci --ignore-scripts`, which skips the postinstall that runs it.
  const patch = spawnSync(process.execPath, [join(here, 'patch-conformance.mjs')], { encoding: 'utf8' });
  if (patch.status !== 0) die(`patch-conformance.mjs failed:\n${patch.stderr}`);
  const known = parseKnownGaps(readFileSync(join(here, 'known-gaps.txt'), 'utf8'), VERSIONS);
  if (known.errors.length) die(`tests/conformance/known-gaps.txt:\n  ${known.errors.join('\n  ')}`);

  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'toolgate-data'), { recursive: true });
  const [refPort, grpcPort, frontPort] = [await freePort(), await freePort(), await freePort()];
  await start('reference server', tsx, ['everything-server.ts'], { cwd: join(here, 'ref-server'), env: { ...process.env, PORT: String(refPort) } },
    /running on/, join(out, 'ref-server.log'));
  const config = join(out, 'toolgate.toml');
  writeFileSync(config, [
    `listen = "127.0.0.1:${grpcPort}"`, `data_dir = "${join(out, 'toolgate-data')}"`, '',
    '[mcp_front]', `listen = "127.0.0.1:${frontPort}"`, '',
    '[[mcp_servers]]', 'name = "everything"', `url = "http://127.0.0.1:${refPort}/mcp"`, 'prefix = ""', '',
  ].join('\n'));
  await start('toolgate', bin, ['serve', '--config', config], { cwd: out, env: { ...process.env, NO_COLOR: '1' } },
    /MCP server connected.*server=everything/, join(out, 'toolgate.log'));
  for (let i = 0; !(await listening(frontPort)); i++) {
    if (i > 100) die(`toolgate's MCP front door is not listening on 127.0.0.1:${frontPort}; see ${out}/toolgate.log`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const urls = { direct: `http://127.0.0.1:${refPort}/mcp`, toolgate: `http://127.0.0.1:${frontPort}/mcp` };
  const rows = [];
  for (const version of VERSIONS) {
    const direct = suite(urls.direct, version, join(out, `${version}-direct`));
    const through = suite(urls.toolgate, version, join(out, `${version}-toolgate`));
    rows.push({ version, direct: counts(direct), through: counts(through), ...compare(direct, through, known.gaps.filter((g) => g.version === version)) });
  }
  stopAll();
  report(rows);
}

function report(rows) {
  const pft = (c) => `${c.passed}/${c.failed}/${c.total}`.padEnd(19);
  console.log(`MCP conformance suite ${JSON.parse(readFileSync(join(here, 'node_modules/@modelcontextprotocol/conformance/package.json'), 'utf8')).version}, --suite active; results in ${out}`);
  console.log(`${'version'.padEnd(12)}${'direct p/f/total'.padEnd(19)}${'toolgate p/f/total'.padEnd(19)}gaps (pass directly, not through toolgate)`);
  for (const r of rows) console.log(`${r.version.padEnd(12)}${pft(r.direct)}${pft(r.through)}${r.gaps.length}`);
  let bad = 0;
  for (const r of rows) {
    if (r.gaps.length) console.log(`\n${r.version} gaps:`);
    for (const g of r.gaps) console.log(`  ${g.id.padEnd(58)} ${g.through.padEnd(8)} ${g.reason ?? 'NOT IN known-gaps.txt'}`);
    if (r.onlyThrough.length)
      console.log(`${r.version}: ${r.onlyThrough.length} check(s) pass through toolgate and not directly (not compared): ${r.onlyThrough.join(', ')}`);
    for (const g of r.unexpected) {
      bad++;
      console.log(`FAIL ${r.version} ${g.id}: passes directly, ${g.through === 'absent' ? 'never runs' : g.through} through toolgate, and known-gaps.txt does not list it`);
    }
    for (const g of r.fixed) {
      bad++;
      console.log(`FAIL ${r.version} ${g.id}: now passes through toolgate; delete line ${g.line} of tests/conformance/known-gaps.txt`);
    }
    for (const g of r.notDirect) {
      bad++;
      console.log(`FAIL ${r.version} ${g.id}: listed on line ${g.line} of known-gaps.txt but ${g.direct} directly, so no longer a toolgate gap; delete or correct the line`);
    }
  }
  const sum = (f) => rows.map(f).join(', ');
  console.log(`\nconformance: ${sum((r) => `${r.version} direct ${r.direct.passed}/${r.direct.total}, through toolgate ${r.through.passed}/${r.through.total}, known gaps ${r.gaps.length}`)}; unexpected ${bad}`);
  if (bad) {
    console.log(`conformance: ${bad} difference(s) from tests/conformance/known-gaps.txt (FAIL lines above)`);
    process.exitCode = 1;
  }
}

main().catch((e) => die(e.message));
