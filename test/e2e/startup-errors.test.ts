/**
 * Start-up errors a person can act on: a taken port found before any model loads and naming the
 * flag to change, a wrong --model-repository in one line, the nearest flag for a misspelt one,
 * tritonserver's enum spellings, --version, --help offering no refused value, and an unknown
 * platform naming what tritium has.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, ROOT, startTritium, stopAndExpectNoShm } from '../helpers/server.js';
import { writeVariant } from './infer-helpers.js';

const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tritium.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

/** A loopback port held by this test process until `close()`. */
async function holdPort(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((r) => server.close(() => r())) };
}

/** A model whose initialize() sleeps long: a start-up that loads it would take minutes. */
function slowRepo(): string {
  const repo = makeRepo([]);
  writeVariant(
    repo,
    'instance_probe',
    'slow_init',
    `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "TIMES" data_type: TYPE_FP64 dims: [ 4 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
parameters { key: "INIT_SLEEP_S" value: { string_value: "600" } }
`,
  );
  return repo;
}

beforeAll(() => ensureBuilt());

describe('a port that is taken', () => {
  it.each([
    ['--http-port', 'HTTP'],
    ['--grpc-port', 'GRPC'],
    ['--metrics-port', 'Metrics'],
  ])('is found before any model loads and names %s', async (flag, service) => {
    const held = await holdPort();
    const repo = slowRepo();
    try {
      const s = await startTritium({ repos: [repo], args: [`${flag}=${held.port}`, '--metrics-address=127.0.0.1'], expectFailure: true });
      const { code } = await s.exited;
      expect(code).not.toBe(0);
      expect(s.log()).toContain(
        `failed to start ${service} service: Unavailable - Socket '127.0.0.1:${held.port}' already in use; stop what holds it or choose another port with ${flag}`,
      );
      // No stub was started for the model.
      expect(s.log()).not.toContain('slow_init');
      expect(s.log()).not.toMatch(/\n\s+at /);
    } finally {
      await held.close();
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it('names the address flag for an address this host lacks', async () => {
    const repo = makeRepo([]);
    const s = await startTritium({ repos: [repo], args: ['--http-address=192.0.2.1'], expectFailure: true });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toMatch(/failed to start HTTP service: Socket '192\.0\.2\.1:0': no such address on this host; change --http-address/);
    fs.rmSync(repo, { recursive: true, force: true });
  });
});

describe('command-line mistakes', () => {
  it('reports a --model-repository that does not exist in one line', () => {
    const r = cli('--model-repository=/nonexistent/models', '--http-port=0', '--grpc-port=0', '--metrics-port=0');
    expect(r.status).toBe(1);
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^E\d{4} .*"failed to stat file \/nonexistent\/models: no such directory; --model-repository must name a model repository directory"$/,
    );
  });

  it('reports a --model-repository that is a file in one line', () => {
    const file = path.join(ROOT, 'package.json');
    const r = cli(`--model-repository=${file}`, '--http-port=0', '--grpc-port=0', '--metrics-port=0');
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`model repository path ${file} is not a directory`);
  });

  it.each([
    ['--htp-port=1', '--http-port'],
    ['--model-repo=x', '--model-repository'],
    ['--grpc-keepalive-tme=5', '--grpc-keepalive-time'],
  ])('suggests the nearest flag for %s', (given, nearest) => {
    const r = cli('--model-repository=x', given);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`unknown option '${given}'`);
    expect(r.stderr).toContain(`(Did you mean ${nearest}?)`);
  });

  it('prints the version with --version', () => {
    const r = cli('--version');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^tritium \d+\.\d+\.\d+ /);
  });

  it('takes every value --help offers, and refuses none of them', () => {
    const help = cli('--help').stdout;
    const offered: Array<[string, string]> = [];
    for (const m of help.matchAll(/^ {2}(--[a-z0-9-]+) <[^>]*>.*\(choices: ([^)]*?)(?:, default: [^)]*)?\)/gm)) {
      for (const c of m[2]!.split(', ')) offered.push([m[1]!, JSON.parse(c)]);
    }
    expect(offered.length).toBeGreaterThan(0);
    for (const [flag, value] of offered) {
      // Parsed fine: start-up gets as far as the repository check.
      const r = cli('--model-repository=/nonexistent', `${flag}=${value}`, '--http-port=0', '--grpc-port=0', '--metrics-port=0');
      expect(`${flag}=${value}: ${r.status} ${r.stderr}`).toMatch(/: 1 .*failed to stat file/s);
    }
  });

  it.each([['--model-control-mode=POLL'], ['--model-control-mode=Explicit'], ['--rate-limit=OFF']])('takes tritonserver’s spelling %s', async (arg) => {
    const repo = makeRepo(['add_sub']);
    const s = await startTritium({ repos: [repo], args: [arg] });
    try {
      const mode = arg.startsWith('--model-control-mode') ? `MODE_${arg.split('=')[1]!.toUpperCase()}` : 'MODE_NONE';
      expect(s.log()).toMatch(new RegExp(`\\| model_control_mode +\\| ${mode} +\\|`));
      expect(s.log()).not.toContain('has no effect');
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('a model for a platform tritium lacks', () => {
  it('names the platform, the file, and what tritium serves', async () => {
    const repo = makeRepo([]);
    fs.mkdirSync(path.join(repo, 'odd', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'odd', 'config.pbtxt'), 'max_batch_size: 0\nplatform: "caffe2_netdef"\n');
    const s = await startTritium({ repos: [repo], expectFailure: true });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toContain(
      `odd/config.pbtxt:2:1: unexpected platform type 'caffe2_netdef' for odd: tritium serves the platform onnxruntime_onnx and the python and onnxruntime backends`,
    );
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('names the backend tritium lacks', async () => {
    const repo = makeRepo([]);
    fs.mkdirSync(path.join(repo, 'plan', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'plan', 'config.pbtxt'), 'platform: "tensorrt_plan"\nmax_batch_size: 0\n');
    const s = await startTritium({ repos: [repo], expectFailure: true });
    await s.exited;
    expect(s.log()).toContain(
      "unable to find backend library for backend 'tensorrt', try specifying runtime on the model configuration. tritium serves the python and onnxruntime backends and Python-based ones, and /opt/tritonserver/backends/tensorrt/model.py does not exist",
    );
    fs.rmSync(repo, { recursive: true, force: true });
  });
});

void stopAndExpectNoShm;
