/**
 * Test helper: starts the real `tritium` CLI (compiled dist/, built by `npm test` or
 * `npm run build`) as a child process on ephemeral loopback ports, waits for its start-up log
 * lines, and stops it with a signal. Ports come from the log lines, as Triton harnesses do.
 * The benchmarks' plain-ESM counterpart is bench/lib/server.mjs: keep the two aligned.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { staleDist } from './dist-fresh.js';
import { mappedMemfdsOf, memfdsOf } from './memfd.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PYTHON = process.env.TRITIUM_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');
export const MODELS = path.join(ROOT, 'python_models');
export const TEST_MODELS = path.join(ROOT, 'test', 'models');
/** Models the benchmarks use too (fixtures/: shared by test/ and bench/, which never import each other). */
export const FIXTURE_MODELS = path.join(ROOT, 'fixtures', 'models');

/** Servers this test file started that have not exited: their logs are printed when a test fails (failure-logs.ts). */
export const liveServers = new Set<Tritium>();

let built = false;
/**
 * For suites that run the compiled server: builds dist/ once per test process if it is missing,
 * and refuses one older than src/ (test/helpers/dist-fresh.ts; TRITIUM_REBUILD=1 rebuilds it
 * before the run).
 */
export function ensureBuilt(): void {
  if (built) return;
  const main = path.join(ROOT, 'dist', 'cli', 'main.js');
  if (!fs.existsSync(main)) {
    const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('tsc failed');
  }
  const stale = staleDist();
  if (stale !== undefined) throw new Error(stale);
  built = true;
}

export interface Tritium {
  proc: ChildProcess;
  http: string;
  httpPort: number;
  grpcPort?: number;
  metricsPort?: number;
  /** `--openai-port`'s bound port, when the server was given one. */
  openaiPort?: number;
  /** Everything the server logged so far. */
  log(): string;
  /** Sends SIGTERM (or the given signal) and resolves with the exit code/signal. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartOptions {
  repos: string[];
  /** The CLI to run (default: this checkout's bin/tritium.js), e.g. an installed package's. */
  bin?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** Resolve without waiting for ports (for start-up failure tests). */
  expectFailure?: boolean;
  timeoutMs?: number;
  /** A command the server runs under (e.g. `unshare -m sh -c '...; exec "$0" "$@"'`): node and its arguments follow it. */
  wrap?: string[];
}

export async function startTritium(o: StartOptions): Promise<Tritium> {
  ensureBuilt();
  const args = [
    o.bin ?? path.join(ROOT, 'bin', 'tritium.js'),
    ...o.repos.map((r) => `--model-repository=${r}`),
    '--http-port=0',
    '--grpc-port=0',
    '--metrics-port=0',
    '--http-address=127.0.0.1',
    '--grpc-address=127.0.0.1',
    `--backend-config=python,python-executable=${PYTHON}`,
    ...threadArgs(o.args ?? []),
    ...(o.args ?? []),
  ];
  const [cmd, cmdArgs] = o.wrap ? [o.wrap[0]!, [...o.wrap.slice(1), process.execPath, ...args]] : [process.execPath, args];
  const proc = spawn(cmd, cmdArgs, { cwd: ROOT, env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const t: Tritium = {
    proc,
    http: '',
    httpPort: 0,
    log: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  liveServers.add(t);
  void exited.then(() => liveServers.delete(t));
  if (o.expectFailure) return t;
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  const want = (o.args ?? []).some((a) => a === '--allow-grpc=false') ? [] : ['GRPC'];
  while (Date.now() < deadline) {
    const http = /Started HTTPService at [^:\s]+:(\d+)/.exec(out);
    const grpc = /Started GRPCInferenceService at [^:\s]+:(\d+)/.exec(out);
    const metrics = /Started Metrics Service at [^:\s]+:(\d+)/.exec(out);
    const openai = /Started OpenAI API at [^:\s]+:(\d+)/.exec(out);
    if (http && metrics && (grpc || want.length === 0 || !hasGrpc())) {
      t.httpPort = Number(http[1]);
      t.http = `http://127.0.0.1:${t.httpPort}`;
      if (grpc) t.grpcPort = Number(grpc[1]);
      t.metricsPort = Number(metrics[1]);
      if (openai) t.openaiPort = Number(openai[1]);
      return t;
    }
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`tritium exited during start-up:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`tritium did not start in time:\n${out}`);
}

/**
 * The suites of the `threads` test project run every server with HTTP and gRPC frontend threads
 * (TRITIUM_TEST_HTTP_THREADS, TRITIUM_TEST_GRPC_THREADS; vitest.config.ts): the same cases,
 * answered by the threads.
 * A suite that sets the count itself keeps its own.
 */
function threadArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const [env, flag] of [
    ['TRITIUM_TEST_HTTP_THREADS', '--http-thread-count'],
    ['TRITIUM_TEST_GRPC_THREADS', '--grpc-thread-count'],
  ] as const) {
    const n = process.env[env];
    if (n !== undefined && !args.some((a) => a.startsWith(flag))) out.push(`${flag}=${n}`);
  }
  return out;
}

/** Whether this build has the gRPC frontend (it logs a GRPCInferenceService line). */
function hasGrpc(): boolean {
  return fs.existsSync(path.join(ROOT, 'dist', 'frontends', 'grpc', 'server.js'));
}

/** A temporary model repository assembled from models of python_models/ and test/models/. */
export function makeRepo(models: Array<string | { from: string; name?: string }>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-repo-'));
  for (const m of models) {
    const from = typeof m === 'string' ? resolveModel(m) : m.from;
    const name = typeof m === 'string' ? path.basename(m) : (m.name ?? path.basename(m.from));
    fs.cpSync(from, path.join(dir, name), { recursive: true });
  }
  return dir;
}

/** Rewrites `<repo>/<name>/config.pbtxt` through `edit` (a test's variant of a model). */
export function editConfig(repo: string, name: string, edit: (config: string) => string): void {
  const file = path.join(repo, name, 'config.pbtxt');
  fs.writeFileSync(file, edit(fs.readFileSync(file, 'utf8')));
}

/** Writes `<repo>/<name>/config.pbtxt` and an empty version directory `1` (an ensemble, or a model whose files the test adds). */
export function writeModel(repo: string, name: string, config: string): void {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
}

/** The lines of `server`'s log so far, only those containing `needle` when given. */
export function logLines(server: Pick<Tritium, 'log'>, needle?: string): string[] {
  return server
    .log()
    .split('\n')
    .filter((l) => needle === undefined || l.includes(needle));
}

/** Starts a server on an empty repository with `args` that must make it refuse to start; resolves with its log. */
export async function refusedStartLog(args: string[]): Promise<string> {
  const s = await startTritium({ repos: [makeRepo([])], args, expectFailure: true });
  await s.exited;
  return s.log();
}

/** The directory of model `name` in test/models, fixtures/models or python_models (searched in that order). */
export function resolveModel(name: string): string {
  for (const base of [TEST_MODELS, FIXTURE_MODELS, MODELS]) {
    const p = path.join(base, name);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`no model '${name}' in test/models or python_models`);
}

/**
 * The shared-memory segments of this server pid (should be none after it stopped): its
 * `/dev/shm` files (the fallback, or after a crash) and the memfds it holds open or mapped,
 * labelled like the files (docs/ipc.md, "Segments"). A memfd goes with the last process holding
 * it, so after the server and its stubs exited only files can remain.
 */
export function shmFilesOf(pid: number | undefined): string[] {
  if (pid === undefined) return [];
  const prefix = `tritium_${pid}_`;
  const files = fs.readdirSync('/dev/shm').filter((f) => f.startsWith(prefix));
  return [...new Set([...files, ...memfdsOf(pid, prefix).keys(), ...mappedMemfdsOf(pid, prefix)])].sort();
}

/**
 * The usual afterAll teardown: stops the server (if it started) with SIGTERM and expects its
 * pid to have left no `/dev/shm` entries behind. Resolves with the exit code/signal.
 */
export async function stopAndExpectNoShm(t: Tritium | undefined): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  const pid = t?.proc.pid;
  const exit = await t?.stop();
  expect(shmFilesOf(pid)).toEqual([]);
  return exit;
}

/** Runs a Python snippet with the test venv; returns stdout (throws with stderr on failure). */
export function python(code: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): string {
  const r = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: timeoutMs });
  if (r.status !== 0) throw new Error(`python failed (${r.status}):\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/**
 * Runs a client script: `prelude` (imports, clients, helpers; it imports json), then `body`,
 * which fills the dict `res`, then `epilogue`; resolves with `res`, printed as the last line.
 */
export async function pythonResult(prelude: string, body: string, epilogue = ''): Promise<any> {
  const out = await pythonAsync(`${prelude}\nres = {}\n${body}\n${epilogue}\n${CLOSE_GRPC_CLIENTS}\nprint(json.dumps(res))\n`);
  return JSON.parse(out.trim().split('\n').pop()!);
}

/**
 * Closes the script's tritonclient gRPC clients before it exits. Left to their `__del__` at
 * interpreter shutdown, grpcio's channel close can wait for ever for a stream's last events,
 * which its daemon thread no longer takes in then (seen once in about 300 runs of a streaming
 * test: the client had its answers, the process never ended).
 */
const CLOSE_GRPC_CLIENTS = `
import sys as _sys
_grpc = _sys.modules.get("tritonclient.grpc")
if _grpc is not None:
    for _client in [v for v in globals().values() if isinstance(v, _grpc.InferenceServerClient)]:
        _client.close()
`;

/** Same as python() but asynchronous (does not block the test's event loop). */
export function pythonAsync(code: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, ['-c', code], { env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`python failed (${code}):\n${err}\n${out}`));
    });
  });
}
