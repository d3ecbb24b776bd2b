#!/usr/bin/env node
/**
 * The HTTP infer header reader (src/frontends/http/infer-header-reader.ts) on perf_analyzer's
 * add_sub header, per read: the same header every time (answered from the model's memo of its
 * last header), two models taking turns with their own headers, and one model whose header
 * changes every time (the memo missed and replaced on every read). Then the request head parser
 * (src/frontends/http/wire/request-head.ts) on a head like libcurl's for that request: the
 * same head every time (the memo of the last head), and heads whose Content-Length changes
 * every time. With `--before <dir>`, a checkout built there runs the same loops in a child
 * process, alternated with this build's.
 *
 *   npm run build && node bench/header-repeat.mjs [--n 1000000] [--rounds 5] [--before <dir>]
 *
 * CPU ns (user + system of this process) per read of a single-threaded loop, no I/O: unlike
 * wall time, it leaves out what the VM's hypervisor takes from the core (compare rows of one run).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg('n', 1_000_000));
const ROUNDS = Number(arg('rounds', 5));
const before = arg('before');
const child = arg('child');

const HEADER =
  '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
  '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
  '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}';

/** 64 bodies of `header` (+ 128 bytes of tensor data each), so the loop does not read one buffer only. */
function bodies(header) {
  const h = Buffer.from(header);
  return { length: h.length, all: Array.from({ length: 64 }, (_, i) => Buffer.concat([h, Buffer.alloc(128, i)])) };
}

/** This process's CPU time so far, in ns. */
function cpuNs() {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

/** A request head as libcurl sends perf_analyzer's add_sub request, with `length` body bytes. */
const head = (length) =>
  Buffer.from(
    `POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: */*\r\nInference-Header-Content-Length: ${HEADER.length}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`,
    'latin1',
  );

/** One round in this process over `root`'s dist: ns per read for each case. */
async function measure(root) {
  const { readUsualInferHeader } = await import(path.join(root, 'dist/frontends/http/infer-header-reader.js'));
  const { parseRequestHead } = await import(path.join(root, 'dist/frontends/http/wire/request-head.js'));
  const a = bodies(HEADER);
  const b = bodies(HEADER.replaceAll('[1,16]', '[2,8]'));
  const loop = (pick) => {
    let sink = 0;
    const t0 = cpuNs();
    for (let i = 0; i < N; i++) {
      const [body, length, model] = pick(i);
      sink += readUsualInferHeader(body, length, model, '1').request.inputs.length;
    }
    if (sink !== 2 * N) throw new Error('a header was not read');
    return (cpuNs() - t0) / N;
  };
  // Heads in 64 buffers each, as the socket's reads would be: equal bytes, never the same buffer.
  const heads = [head(HEADER.length + 128), head(HEADER.length + 129)].map((h) => Array.from({ length: 64 }, () => Buffer.from(h)));
  const headLoop = (pick) => {
    let sink = 0;
    const t0 = cpuNs();
    for (let i = 0; i < N; i++) {
      const buf = pick(i);
      sink += parseRequestHead(buf, 0, buf.length).contentLength > 0 ? 1 : 0;
    }
    if (sink !== N) throw new Error('a head was not read');
    return (cpuNs() - t0) / N;
  };
  return {
    same: loop((i) => [a.all[i & 63], a.length, 'add_sub']),
    twoModels: loop((i) => (i & 1 ? [b.all[i & 63], b.length, 'other'] : [a.all[i & 63], a.length, 'add_sub'])),
    changing: loop((i) => (i & 1 ? [b.all[i & 63], b.length, 'add_sub'] : [a.all[i & 63], a.length, 'add_sub'])),
    headSame: headLoop((i) => heads[0][i & 63]),
    headChanging: headLoop((i) => heads[i & 1][i & 63]),
  };
}

if (child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(child)));
  process.exit(0);
}

const builds = [{ label: 'this', root: ROOT }, ...(before ? [{ label: 'before', root: path.resolve(before) }] : [])];
const runs = new Map(builds.map((b) => [b.label, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
    // A fresh process per round and build: each starts with cold memos and its own JIT.
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', b.root, '--n', String(N)], { encoding: 'utf8' });
    const m = JSON.parse(out);
    runs.get(b.label).push(m);
    console.log(
      `round ${r + 1} ${b.label}: same ${m.same.toFixed(0)} ns, two models ${m.twoModels.toFixed(0)} ns, changing ${m.changing.toFixed(0)} ns; ` +
        `request head: same ${m.headSame.toFixed(0)} ns, changing ${m.headChanging.toFixed(0)} ns`,
    );
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
console.log(`\nmedians of ${ROUNDS} rounds, ${N} reads each, ns per read`);
console.log('| build | same header | two models in turn | header changing every read | same request head | request head changing every read |');
console.log('|---|---:|---:|---:|---:|---:|');
const col = (ms, key) => median(ms.map((m) => m[key])).toFixed(0);
for (const b of builds) {
  const ms = runs.get(b.label);
  console.log(`| ${b.label} | ${col(ms, 'same')} | ${col(ms, 'twoModels')} | ${col(ms, 'changing')} | ${col(ms, 'headSame')} | ${col(ms, 'headChanging')} |`);
}
