/**
 * Every flag of tritonserver 2.51 (`tritonserver --help`, grouped as it groups them) is known:
 * given all at once, each with a valid value, tritium starts and serves, and each flag that has
 * no effect here says so in exactly one warning line; `--help` lists every flag under
 * tritonserver's group and marks the inert ones.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tritium.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

/** tritonserver 2.51's `--help`: its groups and their flags, in order. */
const TRITON_251: Record<string, string[]> = {
  Server: ['--id', '--exit-timeout-secs'],
  Logging: ['--log-verbose', '--log-info', '--log-warning', '--log-error', '--log-format', '--log-file'],
  'Model Repository': [
    '--model-store',
    '--model-repository',
    '--exit-on-error',
    '--disable-auto-complete-config',
    '--strict-readiness',
    '--model-control-mode',
    '--repository-poll-secs',
    '--load-model',
    '--model-config-name',
    '--model-load-thread-count',
    '--model-load-retry-count',
    '--model-namespacing',
    '--enable-peer-access',
  ],
  HTTP: ['--allow-http', '--http-address', '--http-port', '--reuse-http-port', '--http-header-forward-pattern', '--http-thread-count', '--http-restricted-api'],
  GRPC: [
    '--allow-grpc',
    '--grpc-address',
    '--grpc-port',
    '--reuse-grpc-port',
    '--grpc-header-forward-pattern',
    '--grpc-infer-allocation-pool-size',
    '--grpc-use-ssl',
    '--grpc-use-ssl-mutual',
    '--grpc-server-cert',
    '--grpc-server-key',
    '--grpc-root-cert',
    '--grpc-infer-response-compression-level',
    '--grpc-keepalive-time',
    '--grpc-keepalive-timeout',
    '--grpc-keepalive-permit-without-calls',
    '--grpc-http2-max-pings-without-data',
    '--grpc-http2-min-recv-ping-interval-without-data',
    '--grpc-http2-max-ping-strikes',
    '--grpc-max-connection-age',
    '--grpc-max-connection-age-grace',
    '--grpc-restricted-protocol',
  ],
  Sagemaker: ['--allow-sagemaker', '--sagemaker-port', '--sagemaker-safe-port-range', '--sagemaker-thread-count'],
  Vertex: ['--allow-vertex-ai', '--vertex-ai-port', '--vertex-ai-thread-count', '--vertex-ai-default-model'],
  Metrics: [
    '--allow-metrics',
    '--allow-gpu-metrics',
    '--allow-cpu-metrics',
    '--metrics-address',
    '--metrics-port',
    '--metrics-interval-ms',
    '--metrics-config',
  ],
  Tracing: ['--trace-config'],
  Backend: ['--backend-directory', '--backend-config'],
  'Repository Agent': ['--repoagent-directory'],
  'Response Cache': ['--cache-config', '--cache-directory'],
  'Rate Limiter': ['--rate-limit', '--rate-limit-resource'],
  'Memory/Device Management': [
    '--pinned-memory-pool-byte-size',
    '--cuda-memory-pool-byte-size',
    '--cuda-virtual-address-size',
    '--min-supported-compute-capability',
    '--buffer-manager-thread-count',
    '--host-policy',
    '--model-load-gpu-limit',
  ],
  DEPRECATED: [
    '--strict-model-config',
    '--response-cache-byte-size',
    '--trace-file',
    '--trace-level',
    '--trace-rate',
    '--trace-count',
    '--trace-log-frequency',
  ],
};

/** Flags that work in tritium, each with a valid value ('' = a switch without value). */
const WORKING: Record<string, string> = {
  '--id': 'flags-test',
  '--exit-timeout-secs': '5',
  '--log-verbose': '0',
  '--log-info': 'true',
  '--log-warning': 'true',
  '--log-error': 'true',
  '--log-format': 'default',
  '--exit-on-error': 'true',
  '--disable-auto-complete-config': '',
  '--strict-readiness': 'true',
  '--model-control-mode': 'EXPLICIT', // tritonserver's spelling, any case
  '--repository-poll-secs': '15',
  '--load-model': 'add_sub',
  '--model-load-thread-count': '2',
  '--model-config-name': 'h100',
  '--model-load-retry-count': '1',
  '--grpc-infer-response-compression-level': 'HIGH',
  '--http-restricted-api': 'model-repository:admin-key=secret',
  '--grpc-restricted-protocol': 'model-repository:admin-key=secret',
  '--http-header-forward-pattern': 'x-.*',
  '--grpc-header-forward-pattern': 'x-.*',
  '--allow-http': 'true',
  '--allow-grpc': 'true',
  '--reuse-http-port': 'true',
  '--reuse-grpc-port': 'true',
  '--http-thread-count': '2',
  '--grpc-use-ssl': 'false',
  '--grpc-use-ssl-mutual': 'false',
  '--grpc-keepalive-time': '7200000',
  '--grpc-keepalive-timeout': '20000',
  '--grpc-keepalive-permit-without-calls': 'false',
  '--grpc-http2-max-pings-without-data': '2',
  '--grpc-http2-min-recv-ping-interval-without-data': '300000',
  '--grpc-http2-max-ping-strikes': '2',
  '--grpc-max-connection-age': '3600000',
  '--grpc-max-connection-age-grace': '60000',
  '--allow-metrics': 'true',
  '--allow-cpu-metrics': 'true',
  '--allow-gpu-metrics': 'true',
  '--metrics-address': '127.0.0.1',
  '--metrics-interval-ms': '2000',
  '--metrics-config': 'summary_latencies=true',
  '--strict-model-config': 'false',
  '--host-policy': 'gpu_0,cpu-cores=0',
  '--trace-config': 'rate=1000',
  '--backend-directory': '/opt/tritonserver/backends',
  '--cache-config': 'local,size=1048576',
  '--rate-limit': 'execution_count',
  '--rate-limit-resource': 'R1:10:0',
  '--trace-file': path.join(os.tmpdir(), 'tritium-flags-trace.json'),
  '--trace-level': 'OFF',
  '--trace-rate': '1000',
  '--trace-count': '-1',
  '--trace-log-frequency': '0',
};

/** Flags with no effect here, each with a valid value that asks for what tritium lacks. */
const INERT: Record<string, string> = {
  '--model-namespacing': 'true',
  '--enable-peer-access': 'true',
  '--grpc-infer-allocation-pool-size': '16',
  '--allow-sagemaker': 'true',
  '--sagemaker-port': '8080',
  '--sagemaker-safe-port-range': '8000-8002',
  '--sagemaker-thread-count': '8',
  '--allow-vertex-ai': 'true',
  '--vertex-ai-port': '8080',
  '--vertex-ai-thread-count': '8',
  '--vertex-ai-default-model': 'add_sub',
  '--repoagent-directory': '/opt/tritonserver/repoagents',
  '--cache-directory': '/opt/tritonserver/caches',
  '--pinned-memory-pool-byte-size': '268435456',
  '--cuda-memory-pool-byte-size': '0:67108864',
  '--cuda-virtual-address-size': '0:1073741824',
  '--min-supported-compute-capability': '6.0',
  '--buffer-manager-thread-count': '2',
  '--model-load-gpu-limit': '0:0.8',
};

/** Given by the test helper, by this test in another form, or in grpc-tls.test.ts (TLS needs certificates). */
const GIVEN_ELSEWHERE = [
  // --cache-config's deprecated form; given with --cache-config it is refused (response-cache.test.ts).
  '--response-cache-byte-size',
  '--grpc-server-cert',
  '--grpc-server-key',
  '--grpc-root-cert',
  '--http-address',
  '--http-port',
  '--grpc-address',
  '--grpc-port',
  '--metrics-port',
  '--backend-config',
  '--model-repository',
  '--model-store',
];
/** Moves the log away from the output the helper reads; tested in log-file.test.ts. */
const NOT_HERE = ['--log-file'];

beforeAll(() => ensureBuilt());

describe('tritonserver 2.51 flags', () => {
  it('accounts for every flag tritonserver lists', () => {
    const all = Object.values(TRITON_251).flat();
    const covered = new Set([...Object.keys(WORKING), ...Object.keys(INERT), ...GIVEN_ELSEWHERE, ...NOT_HERE]);
    expect(all.filter((f) => !covered.has(f))).toEqual([]);
    expect([...covered].filter((f) => !all.includes(f))).toEqual([]);
  });

  it('lists every flag in --help under tritonserver’s group, and marks the inert ones', () => {
    const r = cli('--help');
    expect(r.status).toBe(0);
    const groupOf = new Map<string, string>();
    const lineOf = new Map<string, string>();
    let group = '';
    for (const line of r.stdout.split('\n')) {
      const heading = /^(\S.*):$/.exec(line);
      if (heading) group = heading[1]!;
      const flag = /^ {2}(--[a-z0-9-]+)/.exec(line);
      if (flag) {
        groupOf.set(flag[1]!, group);
        lineOf.set(flag[1]!, line);
      }
    }
    for (const [g, flags] of Object.entries(TRITON_251)) {
      for (const f of flags) expect(`${f}: ${groupOf.get(f)}`).toBe(`${f}: ${g}`);
    }
    for (const f of Object.keys(INERT)) expect(lineOf.get(f)).toContain('accepted, no effect:');
    for (const f of Object.keys(WORKING)) expect(lineOf.get(f)).not.toMatch(/no effect|refused/);
  });

  describe('all at once', () => {
    let s: Tritium | undefined;
    const repo = makeRepo(['add_sub']);
    beforeAll(async () => {
      const args = [...Object.entries(WORKING), ...Object.entries(INERT)].map(([f, v]) => (v === '' ? f : `${f}=${v}`));
      s = await startTritium({ repos: [], args: [`--model-store=${repo}`, ...args] });
    });
    afterAll(async () => {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    });

    it('starts and serves', async () => {
      const meta = await (await fetch(`${s!.http}/v2`)).json();
      expect(meta.name).toBe('flags-test');
      const res = await fetch(`${s!.http}/v2/models/add_sub/ready`);
      expect(res.status).toBe(200);
    });

    it('prints one warning line per inert flag, and none for the flags that work', () => {
      const warnings = s!
        .log()
        .split('\n')
        .filter((l) => l.includes('has no effect in tritium'));
      for (const [f, v] of Object.entries(INERT)) {
        expect(
          warnings.filter((l) => l.includes(`"${f}=${v} has no effect in tritium: `)),
          f,
        ).toHaveLength(1);
      }
      expect(warnings).toHaveLength(Object.keys(INERT).length);
      for (const l of warnings) expect(l).toMatch(/^W\d{4} /);
    });
  });

  it('says nothing for inert flags given the value that is tritium’s behaviour', async () => {
    const repo = makeRepo(['add_sub']);
    const s2 = await startTritium({
      repos: [repo],
      args: [
        '--rate-limit=OFF',
        '--allow-sagemaker=false',
        '--reuse-http-port=false',
        '--grpc-infer-response-compression-level=none',
        '--allow-gpu-metrics=false',
      ],
    });
    try {
      expect(s2.log()).not.toContain('has no effect in tritium');
    } finally {
      await stopAndExpectNoShm(s2);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it('refuses a malformed --metrics-config summary_quantiles', () => {
    for (const bad of ['0.5', '0.5:x', '1.5:0.01', '0.5:0.05,']) {
      const r = cli(`--model-repository=${os.tmpdir()}`, `--metrics-config=summary_quantiles=${bad}`);
      expect(r.status, bad).toBe(2);
      expect(r.stderr).toContain(`--metrics-config=summary_quantiles expects <quantile>:<error>,... with numbers between 0 and 1`);
    }
  });

  it('refuses a bad value of an inert flag as tritonserver would', () => {
    const r = cli(`--model-repository=${os.tmpdir()}`, '--sagemaker-thread-count=many');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--sagemaker-thread-count expects an integer, got 'many'");
  });
});
