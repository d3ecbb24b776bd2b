#!/usr/bin/env node
/**
 * Reload under load: a Python model (fixtures/models/reload_probe, one instance, execute sleeps
 * --exec-ms and answers its config's GENERATION) served in explicit mode, C HTTP clients in a
 * closed loop, and --reloads reloads through `POST /v2/repository/models/<m>/load` with a config
 * override that bumps GENERATION (and sleeps --init-s in initialize, as a model that takes time
 * to load). For each reload: the time the load call took, and the time from the load call to
 * the first response of the new generation seen by a client. At the end: requests served and
 * failed (must be 0), and requests sent after a load call returned that an older generation
 * answered (must be 0: the new version serves once the load returns).
 *
 *   npm run build && node bench/reload.mjs [--concurrency 8] [--reloads 5] [--exec-ms 2]
 *        [--init-s 0] [--settle-ms 1000] [--json bench/.out/reload/result.json]
 *
 * Exit status 1 if a request failed or an old generation answered after its load returned.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startTritium } from './lib/server.mjs';

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}

if (process.argv.includes('--help')) {
  console.log(fs.readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0]);
  process.exit(0);
}

const concurrency = Number(arg('concurrency', 8));
const reloads = Number(arg('reloads', 5));
const execMs = Number(arg('exec-ms', 2));
const initS = Number(arg('init-s', 0));
const settleMs = Number(arg('settle-ms', 1000));
const jsonOut = arg('json', path.join(ROOT, 'bench', '.out', 'reload', 'result.json'));
const MODEL = 'reload_probe';

/** The served config (JSON, as GET .../config gives it) with the generation and load time set. */
function config(served, generation) {
  const parameters = { GENERATION: { string_value: String(generation) }, INIT_SLEEP_S: { string_value: String(initS) } };
  return JSON.stringify({ ...served, parameters });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency + 2 });

const get = (port, p) => request(port, 'GET', p, '');
const post = (port, p, body) => request(port, 'POST', p, body);

function request(port, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(body);
    const req = http.request(
      { host: '127.0.0.1', port, path: p, method, agent, headers: { 'Content-Type': 'application/json', 'Content-Length': data.length } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function main() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-reload-'));
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', MODEL), path.join(repo, MODEL), { recursive: true });
  const server = await startTritium({ repos: repo, args: ['--model-control-mode=explicit', `--load-model=${MODEL}`] });
  const port = server.httpPort;
  const servedConfig = JSON.parse((await get(port, `/v2/models/${MODEL}/config`)).body);
  const inferBody = JSON.stringify({ inputs: [{ name: 'MS', datatype: 'INT32', shape: [1], data: [execMs] }] });

  let stop = false;
  let served = 0;
  const failures = [];
  /** [sent, answered, generation] of every response, in arrival order. */
  const answers = [];
  const client = async () => {
    while (!stop) {
      try {
        const sent = performance.now();
        const r = await post(port, `/v2/models/${MODEL}/infer`, inferBody);
        if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
        else {
          served++;
          answers.push([sent, performance.now(), JSON.parse(r.body).outputs[0].data[0]]);
        }
      } catch (err) {
        failures.push(String(err));
      }
    }
  };
  const clients = Array.from({ length: concurrency }, client);
  await new Promise((r) => setTimeout(r, settleMs));

  const rows = [];
  let staleAfterReturn = 0;
  for (let g = 2; g <= reloads + 1; g++) {
    const from = answers.length;
    const t0 = performance.now();
    const r = await post(port, `/v2/repository/models/${MODEL}/load`, JSON.stringify({ parameters: { config: config(servedConfig, g) } }));
    const t1 = performance.now();
    if (r.status !== 200) throw new Error(`load ${g} answered ${r.status} ${r.body}`);
    await new Promise((res) => setTimeout(res, settleMs));
    const after = answers.slice(from);
    const first = after.find(([, , gen]) => gen === g);
    // A request sent after the load returned must reach the new generation.
    staleAfterReturn += after.filter(([sent, , gen]) => sent > t1 && gen < g).length;
    rows.push({ generation: g, loadCallMs: t1 - t0, toFirstNewResponseMs: first ? first[1] - t0 : undefined });
  }
  stop = true;
  await Promise.all(clients);
  await server.stop();
  agent.destroy();
  fs.rmSync(repo, { recursive: true, force: true });

  const fmt = (x) => (x === undefined ? 'n/a' : x.toFixed(1));
  console.log(`reload under load: ${concurrency} HTTP clients, execute ${execMs} ms, initialize +${initS} s, ${reloads} reloads, ${os.cpus().length} CPUs`);
  console.log('generation  load call (ms)  load call → first new response (ms)');
  for (const r of rows) console.log(`${String(r.generation).padStart(10)}  ${fmt(r.loadCallMs).padStart(14)}  ${fmt(r.toFirstNewResponseMs).padStart(35)}`);
  console.log(`requests served: ${served}, failed: ${failures.length}, sent after a load returned but answered by the old generation: ${staleAfterReturn}`);
  for (const f of failures.slice(0, 5)) console.log(`  failure: ${f}`);
  fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
  fs.writeFileSync(jsonOut, JSON.stringify({ concurrency, execMs, initS, rows, served, failed: failures.length, staleAfterReturn }, null, 2));
  process.exit(failures.length === 0 && staleAfterReturn === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
