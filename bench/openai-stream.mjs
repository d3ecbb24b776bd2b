#!/usr/bin/env node
/**
 * Streaming over the OpenAI endpoint against the same model's generate_stream: CPU per token.
 * Target (the OpenAI-frontend issue): streaming overhead per token over `POST /v1/completions`
 * ≤ 1.2 × the same model's `POST /v2/models/<m>/generate_stream`.
 *
 * Model: python_models/tiny_chat (decoupled, vLLM-style tensors; it answers a prompt's words
 * reversed, one word per token, one response per token when `stream` is true), copied into a
 * temporary repository with `step_ms` = 0 so that the cost is the serving, not its sleep. The
 * prompt is --tokens distinct words and max_tokens is --tokens, so every stream carries exactly
 * --tokens token events plus the final one (no text, the finish reason).
 *
 * One server, both paths in turn for --rounds rounds (order swapped every round: A B, B A, ...),
 * after one discarded warm-up window per path. In a window --concurrency clients (node:http,
 * keep-alive) each send one stream after another and read every body to its end; no stream
 * starts after the window's time (or its --requests) is up, and the CPU snapshot is taken once
 * the last one has ended, so every CPU tick between the two snapshots belongs to a counted
 * stream. Each stream is checked: event count, the text (the prompt's words reversed), the
 * finish reason, no error event. CPU from /proc: utime + stime of the server process (all its
 * threads) and of every process below it (the model's stub). The client's own CPU is not
 * counted (it shares the machine's cores, which bounds tokens/s, not the CPU figures).
 *
 * Paths (the same tensors reach the model, so the stub does the same work):
 *   openai           POST /v1/completions {model, prompt, stream: true, max_tokens}
 *   generate_stream  POST /v2/models/tiny_chat/generate_stream {text_input, stream: true,
 *                    exclude_input_in_output: true, sampling_parameters: '{"max_tokens":N}',
 *                    return_num_input_tokens, return_num_output_tokens, return_finish_reason}
 *
 *   npm run build && node bench/openai-stream.mjs [--rounds 4] [--duration-ms 6000 | --requests N]
 *        [--concurrency 4] [--tokens 256] [--warmup-ms 2000] [--only openai|generate_stream]
 *        [--cpu-prof] [--json FILE] [--help]
 *
 * Markdown on stdout (and bench/.out/openai-stream/report.md); progress on stderr.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { arg } from './grpc-common.mjs';
import { checkFlags, positive, showHelp } from './lib/options.mjs';
import { clockTicks, treeCpu } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, publishReport, table } from './lib/report.mjs';
import { ROOT, ensureBuilt, startTritium } from './lib/server.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'openai-stream');
const MODEL_DIR = path.join(ROOT, 'python_models', 'tiny_chat');
const MODEL = 'tiny_chat';
const PATHS = ['openai', 'generate_stream'];

const USAGE = `usage: node bench/openai-stream.mjs [options]

CPU per streamed token of python_models/tiny_chat (step_ms 0) over POST /v1/completions
(stream: true) against POST /v2/models/tiny_chat/generate_stream, on one server, the two paths
in turn. Target: openai ≤ 1.2 × generate_stream in CPU per token.

  --rounds N          measured rounds, each one window per path, order swapped every round
                      (default 4: each path first in half of them); medians over rounds
  --duration-ms MS    length of a measured window (default 6000); streams in flight at its
                      end run to completion and count
  --requests N        instead of a duration: N streams per window (over all clients)
  --concurrency C     concurrent streams, one keep-alive connection each (default 4)
  --tokens T          words in the prompt = max_tokens = token events per stream (default 256)
  --warmup-ms MS      one discarded window per path before the first round (default 2000)
  --only PATH         measure one path only (openai or generate_stream), e.g. with --cpu-prof
  --cpu-prof          run the server under node --cpu-prof (profiles in
                      bench/.out/openai-stream/prof/, written when the server stops); the
                      profiler's own cost is in the CPU figures of such a run
  --json FILE         also write every raw figure to FILE
  --help              this text

Needs: npm run build (dist/), the .venv with numpy, Linux (/proc).`;

const KNOWN_FLAGS = ['rounds', 'duration-ms', 'requests', 'concurrency', 'tokens', 'warmup-ms', 'only', 'cpu-prof', 'json', 'help'];
const BOOLEAN_FLAGS = ['cpu-prof', 'help'];

function parseOptions() {
  checkFlags(process.argv.slice(2), KNOWN_FLAGS, BOOLEAN_FLAGS, USAGE);
  const only = arg('only', '');
  if (only !== '' && !PATHS.includes(only)) throw new Error(`--only must be one of ${PATHS.join(', ')}, not ${only}`);
  const requests = arg('requests', '');
  return {
    help: process.argv.includes('--help'),
    rounds: Math.round(positive('rounds', arg('rounds', '4'))),
    durationMs: Math.round(positive('duration-ms', arg('duration-ms', '6000'))),
    requests: requests === '' ? undefined : Math.round(positive('requests', requests)),
    concurrency: Math.round(positive('concurrency', arg('concurrency', '4'))),
    tokens: Math.round(positive('tokens', arg('tokens', '256'))),
    warmupMs: Math.round(positive('warmup-ms', arg('warmup-ms', '2000'))),
    paths: only === '' ? PATHS : [only],
    cpuProf: process.argv.includes('--cpu-prof'),
    json: arg('json', ''),
  };
}

// ---------------------------------------------------------------- machine

function cpuModel() {
  const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  return m ? m[1].trim() : (os.cpus()[0]?.model ?? 'unknown CPU');
}

function memGiB() {
  const m = /^MemTotal:\s+(\d+)\s+kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 2 ** 20 : os.totalmem() / 2 ** 30;
}

// ---------------------------------------------------------------- the model's repository

/** tiny_chat copied into `repo` with `step_ms` = 0. */
function makeRepo(repo) {
  const dir = path.join(repo, MODEL);
  fs.cpSync(MODEL_DIR, dir, { recursive: true });
  const cfg = path.join(dir, 'config.pbtxt');
  const text = fs.readFileSync(cfg, 'utf8');
  if (/key:\s*"step_ms"/.test(text)) throw new Error(`${cfg} already sets step_ms; update makeRepo()`);
  fs.writeFileSync(cfg, `${text}\nparameters { key: "step_ms" value: { string_value: "0" } }\n`);
}

// ---------------------------------------------------------------- the two paths

/** What each path sends, and how its events are checked and counted. */
function pathSpec(name, prompt, tokens) {
  if (name === 'openai') {
    return {
      url: '/v1/completions',
      body: JSON.stringify({ model: MODEL, prompt, stream: true, max_tokens: tokens }),
      /** One SSE data field → { text, finish, done } or throws. */
      event(data) {
        if (data === '[DONE]') return { done: true };
        const j = JSON.parse(data);
        if (j.error !== undefined) throw new Error(`error event: ${data}`);
        const c = j.choices?.[0];
        if (c === undefined || typeof c.text !== 'string') throw new Error(`unexpected chunk: ${data}`);
        return { text: c.text, finish: c.finish_reason ?? null };
      },
      // tokens text chunks, one closing chunk (finish_reason, no text), then [DONE].
      events: tokens + 2,
    };
  }
  return {
    url: `/v2/models/${MODEL}/generate_stream`,
    body: JSON.stringify({
      text_input: prompt,
      stream: true,
      exclude_input_in_output: true,
      sampling_parameters: JSON.stringify({ max_tokens: tokens }),
      return_num_input_tokens: true,
      return_num_output_tokens: true,
      return_finish_reason: true,
    }),
    event(data) {
      const j = JSON.parse(data);
      if (j.error !== undefined) throw new Error(`error event: ${data}`);
      if (typeof j.text_output !== 'string') throw new Error(`unexpected event: ${data}`);
      return { text: j.text_output, finish: j.finish_reason ?? null };
    },
    // tokens responses, then the model's final one (no text, the finish reason).
    events: tokens + 1,
  };
}

/**
 * One stream on `agent`: resolves with the number of token events (events with text) once
 * the body has ended and been checked against `expected` text.
 */
function stream(port, agent, spec, expected) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: spec.url,
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(spec.body) },
      },
      (res) => {
        res.setEncoding('utf8');
        let pending = '';
        let events = 0;
        let tokenEvents = 0;
        let text = '';
        let finish = null;
        let done = false;
        let failure;
        res.on('data', (chunk) => {
          if (failure !== undefined) return;
          pending += chunk;
          let k;
          while ((k = pending.indexOf('\n\n')) >= 0) {
            const ev = pending.slice(0, k);
            pending = pending.slice(k + 2);
            if (!ev.startsWith('data: ')) {
              failure = new Error(`${spec.url}: not an SSE data event: ${ev.slice(0, 200)}`);
              return;
            }
            try {
              const e = spec.event(ev.slice(6));
              events++;
              if (e.done) {
                done = true;
                continue;
              }
              if (done) throw new Error('event after [DONE]');
              if (e.text !== '') tokenEvents++;
              text += e.text;
              if (e.finish !== null) finish = e.finish;
            } catch (err) {
              failure = new Error(`${spec.url}: ${err.message}`);
            }
          }
        });
        res.on('end', () => {
          if (failure !== undefined) return reject(failure);
          if (res.statusCode !== 200) return reject(new Error(`${spec.url}: status ${res.statusCode}: ${pending.slice(0, 300)}`));
          if (pending !== '') return reject(new Error(`${spec.url}: ${pending.length} bytes after the last event`));
          if (events !== spec.events) return reject(new Error(`${spec.url}: ${events} events, expected ${spec.events}`));
          if (text !== expected) return reject(new Error(`${spec.url}: wrong text (${text.length} chars, expected ${expected.length})`));
          if (finish !== 'stop' && finish !== 'length') return reject(new Error(`${spec.url}: finish reason ${finish}`));
          if (spec.url === '/v1/completions' && !done) return reject(new Error(`${spec.url}: no [DONE]`));
          resolve(tokenEvents);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(spec.body);
  });
}

/**
 * `concurrency` clients streaming `spec` until `durationMs` has passed (or `requests` streams
 * were started); resolves once all have ended, with { streams, tokens, wallS }.
 */
async function drive(port, spec, expected, { concurrency, durationMs, requests }) {
  const agents = Array.from({ length: concurrency }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  let started = 0;
  let streams = 0;
  let tokens = 0;
  const more = () => (requests !== undefined ? started < requests : performance.now() < deadline);
  try {
    await Promise.all(
      agents.map(async (agent) => {
        while (more()) {
          started++;
          // (Not `tokens += await ...`: that reads `tokens` before the await, losing the others' counts.)
          const n = await stream(port, agent, spec, expected);
          tokens += n;
          streams++;
        }
      }),
    );
  } finally {
    for (const a of agents) a.destroy();
  }
  return { streams, tokens, wallS: (performance.now() - t0) / 1000 };
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseOptions();
  if (showHelp(opts, USAGE)) return;
  ensureBuilt();
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  fs.rmSync(OUT, { recursive: true, force: true });
  const repo = path.join(OUT, 'repo');
  makeRepo(repo);

  const words = Array.from({ length: opts.tokens }, (_, i) => `w${i}`);
  const prompt = words.join(' ');
  const expected = [...words].reverse().join(' ');
  const specs = Object.fromEntries(opts.paths.map((p) => [p, pathSpec(p, prompt, opts.tokens)]));
  const window = { concurrency: opts.concurrency, durationMs: opts.durationMs, requests: opts.requests };

  const profDir = path.join(OUT, 'prof');
  const nodeArgs = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const server = await startTritium({ repos: repo, nodeArgs });
  const pid = server.proc.pid;
  const runs = Object.fromEntries(opts.paths.map((p) => [p, []]));
  try {
    for (const p of opts.paths) {
      process.stderr.write(`openai-stream: warm-up ${p} (${opts.warmupMs} ms)\n`);
      await drive(server.httpPort, specs[p], expected, { ...window, durationMs: opts.warmupMs, requests: undefined });
    }
    for (let round = 0; round < opts.rounds; round++) {
      const order = round % 2 === 0 ? opts.paths : [...opts.paths].reverse();
      for (const p of order) {
        const before = treeCpu(pid);
        const r = await drive(server.httpPort, specs[p], expected, window);
        const after = treeCpu(pid);
        if (after.processes !== before.processes) throw new Error(`the server's processes changed during a window (${before.processes} → ${after.processes})`);
        const serverUs = ((after.server - before.server) / r.tokens) * 1e6;
        const stubUs = ((after.children - before.children) / r.tokens) * 1e6;
        const cpuS = after.server - before.server + after.children - before.children;
        const run = { round, ...r, tokensPerS: r.tokens / r.wallS, cpuS, serverUs, stubUs, totalUs: serverUs + stubUs };
        runs[p].push(run);
        process.stderr.write(
          `openai-stream: round ${round} ${p}: ${r.streams} streams, ${r.tokens} tokens in ${r.wallS.toFixed(1)} s; server ${serverUs.toFixed(1)} + stub ${stubUs.toFixed(1)} µs/token\n`,
        );
      }
    }
  } finally {
    await server.stop();
  }

  const med = (p, key) => median(runs[p].map((r) => r[key]));
  const lines = [];
  lines.push(`# OpenAI streaming against generate_stream (${startedAt.toISOString().slice(0, 10)})`, '');
  lines.push(`command: ${commandLine('bench/openai-stream.mjs')}`);
  lines.push(`date: ${startedAt.toISOString()}`);
  lines.push(
    `machine: nproc ${os.availableParallelism?.() ?? os.cpus().length}, ${cpuModel()}, ${memGiB().toFixed(1)} GiB, Linux ${os.release()}, node ${process.version}`,
  );
  lines.push(`commit: ${gitCommit()}`);
  lines.push(`load average at start: ${loadAtStart}; at end: ${loadAverage()}`);
  lines.push(
    `model: tiny_chat, step_ms 0; prompt of ${opts.tokens} words, max_tokens ${opts.tokens} → ${opts.tokens} token events per stream; ${opts.concurrency} concurrent streams; ` +
      `${opts.rounds} rounds × ${opts.requests !== undefined ? `${opts.requests} streams` : `${opts.durationMs} ms`} per path, order swapped every round; medians over rounds`,
  );
  lines.push(
    `CPU: utime + stime from /proc of the server process and of its stub (the client's own CPU is NOT counted)${opts.cpuProf ? '; server under --cpu-prof' : ''}`,
    '',
  );
  lines.push(
    table(
      ['path', 'streams / round', 'tokens/s', 'server CPU µs/token', 'stub CPU µs/token', 'total CPU µs/token'],
      opts.paths.map((p) => [
        p,
        fmt(med(p, 'streams')),
        fmt(med(p, 'tokensPerS')),
        fmt(med(p, 'serverUs'), 1),
        fmt(med(p, 'stubUs'), 1),
        fmt(med(p, 'totalUs'), 1),
      ]),
    ),
  );
  lines.push('');
  lines.push(
    table(
      ['round', ...opts.paths.flatMap((p) => [`${p} tokens/s`, `${p} server / stub µs/token`])],
      runs[opts.paths[0]].map((_, i) => [
        String(i),
        ...opts.paths.flatMap((p) => [fmt(runs[p][i].tokensPerS), `${fmt(runs[p][i].serverUs, 1)} / ${fmt(runs[p][i].stubUs, 1)}`]),
      ]),
    ),
  );
  if (opts.paths.length === 2) {
    const ratio = (key) => med('openai', key) / med('generate_stream', key);
    const perRound = (key) => runs.openai.map((r, i) => r[key] / runs.generate_stream[i][key]);
    const range = (xs) => `${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)}`;
    const total = ratio('totalUs');
    lines.push('');
    lines.push(
      `openai / generate_stream, total CPU per token: **${fmt(total, 2)}** (per round ${range(perRound('totalUs'))}); target ≤ 1.20: ${total <= 1.2 ? 'met' : 'NOT met'}`,
    );
    lines.push(`openai / generate_stream, server CPU per token: ${fmt(ratio('serverUs'), 2)} (per round ${range(perRound('serverUs'))})`);
    lines.push(`openai / generate_stream, stub CPU per token: ${fmt(ratio('stubUs'), 2)}; tokens/s: ${fmt(ratio('tokensPerS'), 2)}`);
  }
  const minCpuS = Math.min(
    ...Object.values(runs)
      .flat()
      .map((r) => r.cpuS),
  );
  if (minCpuS < 1)
    lines.push(
      '',
      `note: a window measured only ${fmt(minCpuS, 2)} s of CPU (/proc counts in ${fmt(1000 / clockTicks())} ms ticks); lengthen the windows for figures worth quoting`,
    );
  if (opts.cpuProf) lines.push('', `CPU profiles: ${profDir}`);
  fs.mkdirSync(OUT, { recursive: true });
  publishReport(lines.join('\n'), OUT);
  const raw = { options: opts, startedAt: startedAt.toISOString(), machine: { nproc: os.cpus().length, cpu: cpuModel(), memGiB: memGiB() }, runs };
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(raw, null, 2));
  if (opts.json !== '') fs.writeFileSync(opts.json, JSON.stringify(raw, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
