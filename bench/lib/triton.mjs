/**
 * Benchmark helper: the real NVIDIA Triton server, for side-by-side runs with tritium.
 *
 * Triton comes from PyPI's nvidia-pytriton wheel, which ships a CPU-capable `tritonserver`
 * binary and the Python backend, installed on first use into the benchmark's own virtualenv
 * bench/.venv-triton (never the project's .venv, never at npm install). The Python backend's
 * stub is built per Python version and shipped beside it; the one matching the venv's Python
 * is copied into backends/python/ where tritonserver looks for it.
 *
 * Also the lifetime helpers both servers share here: free ports, readiness polling, a stop that
 * escalates to SIGKILL, and a last-resort kill for process exit.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { cmdline, descendants } from './proc-stats.mjs';
import { PYTHON, ROOT } from './server.mjs';

export const TRITON_VENV = path.join(ROOT, 'bench', '.venv-triton');
const VENV_BIN = path.join(TRITON_VENV, 'bin');

/** Runs a set-up command with its output on our stderr (stdout is the report); throws on failure. */
function runSetup(cmd, args) {
  process.stderr.write(`vs-triton: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

/** `major.minor` of the venv's Python. */
function venvPythonVersion() {
  const r = spawnSync(path.join(VENV_BIN, 'python'), ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot run ${path.join(VENV_BIN, 'python')}: ${r.stderr}`);
  return r.stdout.trim();
}

/** pytriton's tritonserver directory inside the venv, or undefined before the install. */
function tritonHome() {
  const lib = path.join(TRITON_VENV, 'lib');
  if (!fs.existsSync(lib)) return undefined;
  for (const py of fs.readdirSync(lib)) {
    const home = path.join(lib, py, 'site-packages', 'pytriton', 'tritonserver');
    if (fs.existsSync(path.join(home, 'bin', 'tritonserver'))) return home;
  }
  return undefined;
}

function venvHasNumpy() {
  return spawnSync(path.join(VENV_BIN, 'python'), ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;
}

/**
 * Makes sure bench/.venv-triton holds Triton and numpy (the stub imports numpy from it), installing
 * what is missing; returns { home, bin, backends, venvBin, python } (python: `major.minor`).
 */
export function ensureTriton() {
  if (process.env.TRITON_HOME) return tritonAt(process.env.TRITON_HOME);
  if (!fs.existsSync(path.join(VENV_BIN, 'python'))) {
    // The project's interpreter, so that both servers' stubs run the same Python version.
    runSetup(fs.existsSync(PYTHON) ? PYTHON : 'python3', ['-m', 'venv', TRITON_VENV]);
  }
  if (!tritonHome() || !venvHasNumpy()) runSetup(path.join(VENV_BIN, 'pip'), ['install', 'nvidia-pytriton', 'numpy']);
  const home = tritonHome();
  if (!home) throw new Error(`nvidia-pytriton installed no tritonserver under ${TRITON_VENV}`);
  const python = venvPythonVersion();
  const stub = path.join(home, 'backends', 'python', 'triton_python_backend_stub');
  if (!fs.existsSync(stub)) {
    const shipped = path.join(home, 'python_backend_stubs', python, 'triton_python_backend_stub');
    if (!fs.existsSync(shipped)) throw new Error(`pytriton ships no Python backend stub for Python ${python} (${shipped})`);
    fs.copyFileSync(shipped, stub);
    fs.chmodSync(stub, 0o755);
  }
  return { home, bin: path.join(home, 'bin', 'tritonserver'), backends: path.join(home, 'backends'), venvBin: VENV_BIN, python };
}

/**
 * A tritonserver unpacked elsewhere (a host without PyPI, e.g. a lent many-core machine):
 * TRITON_HOME is pytriton's tritonserver directory, its stub already in backends/python/, and
 * TRITON_PYTHON_BIN a directory whose `python` has numpy (the stub finds its packages through
 * the first python on PATH).
 */
function tritonAt(home) {
  const bin = path.join(home, 'bin', 'tritonserver');
  if (!fs.existsSync(bin)) throw new Error(`TRITON_HOME=${home} holds no bin/tritonserver`);
  const venvBin = process.env.TRITON_PYTHON_BIN ?? VENV_BIN;
  const r = spawnSync(path.join(venvBin, 'python'), ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  return { home, bin, backends: path.join(home, 'backends'), venvBin, python: r.stdout?.trim() || 'unknown' };
}

/** `n` distinct loopback ports that were free a moment ago (all held open together, then released). */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      servers.push(s);
      await new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(() => resolve()))));
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `GET /v2/health/ready` on `port` every `everyMs` until it answers 200; resolves with the
 * time that happened (performance.now()). Rejects once `signal` aborts or `deadline` passes.
 */
export async function waitReady(port, { deadline, signal, everyMs = 20 }) {
  const url = `http://127.0.0.1:${port}/v2/health/ready`;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return performance.now();
    } catch {
      // not listening yet
    }
    await sleep(everyMs);
  }
  throw new Error(`no 200 from ${url} in time`);
}

/**
 * Starts tritonserver on `repo` with fresh loopback ports and resolves once it is ready, with a
 * handle shaped like startTritium()'s plus `spawnedAt` and `readyAt` (performance.now()).
 */
export async function startTriton(triton, { repo, timeoutMs = 180_000 }) {
  const [httpPort, grpcPort, metricsPort] = await freePorts(3);
  const args = [
    `--model-repository=${repo}`,
    `--backend-directory=${triton.backends}`,
    `--http-port=${httpPort}`,
    `--grpc-port=${grpcPort}`,
    `--metrics-port=${metricsPort}`,
    '--http-address=127.0.0.1',
    '--grpc-address=127.0.0.1',
    '--metrics-address=127.0.0.1',
  ];
  // The stub embeds Python and finds its packages (numpy) through the first python on PATH.
  const env = { ...process.env, PATH: `${triton.venvBin}:${process.env.PATH ?? ''}` };
  const spawnedAt = performance.now();
  const proc = spawn(triton.bin, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d) => {
    log = (log + d).slice(-200_000);
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const server = {
    proc,
    http: `http://127.0.0.1:${httpPort}`,
    httpPort,
    grpcPort,
    metricsPort,
    log: () => log,
    stop: (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
    exited,
    spawnedAt,
  };
  const died = new AbortController();
  exited.then(() => died.abort(new Error('exited')));
  proc.once('error', (e) => died.abort(e));
  try {
    server.readyAt = await waitReady(httpPort, { deadline: Date.now() + timeoutMs, signal: died.signal });
  } catch (err) {
    killNow(server);
    throw new Error(`tritonserver did not become ready (${err.message}):\n${log.slice(-4000)}`);
  }
  return server;
}

function alive(proc) {
  return proc.exitCode === null && proc.signalCode === null;
}

/**
 * Shared-memory files a killed server leaves behind: tritium names its regions
 * tritium_<serverPid>_*, Triton passes each stub its region name as the stub's second argument.
 */
function shmFilesOf(pid, kids) {
  const own = fs.existsSync('/dev/shm') ? fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`tritium_${pid}_`)) : [];
  const triton = kids.map((k) => cmdline(k)[2]).filter((r) => typeof r === 'string' && r.startsWith('triton_python_backend_shm_region_'));
  return [...own, ...triton];
}

/**
 * SIGKILLs a server and everything below it, synchronously (usable in an 'exit' handler), and
 * removes the shared memory it can no longer remove itself.
 */
export function killNow(server) {
  const pid = server.proc.pid;
  if (pid === undefined) return;
  const kids = descendants(pid);
  const shm = shmFilesOf(pid, kids);
  for (const p of [pid, ...kids]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const f of shm) fs.rmSync(path.join('/dev/shm', f), { force: true });
}

/** SIGTERM, then SIGKILL (and shared-memory cleanup) if the server is not gone after `timeoutMs`. */
export async function stopServer(server, timeoutMs = 30_000) {
  if (!alive(server.proc)) return server.exited;
  server.stop('SIGTERM');
  const timer = new Promise((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
  if ((await Promise.race([server.exited, timer])) === 'timeout') {
    process.stderr.write(`vs-triton: pid ${server.proc.pid} ignored SIGTERM for ${timeoutMs} ms; killing it\n`);
    killNow(server);
  }
  return server.exited;
}
