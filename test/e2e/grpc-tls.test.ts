/**
 * gRPC over TLS (`--grpc-use-ssl`, `--grpc-use-ssl-mutual` with `--grpc-server-cert`,
 * `--grpc-server-key`, `--grpc-root-cert`), with tritonclient.grpc's `ssl=True` client and
 * certificates made for the test by openssl.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, python, ROOT, startTritium, stopAndExpectNoShm } from '../helpers/server.js';

const haveOpenssl = spawnSync('openssl', ['version']).status === 0;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-tls-'));
const repo = makeRepo(['add_sub']);
const f = (name: string) => path.join(dir, name);

/** A CA, a server certificate for localhost / 127.0.0.1 and a client certificate, all signed by it. */
function makeCertificates(): void {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=tritium-test-ca');
  for (const who of ['server', 'client']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who === 'server' ? 'localhost' : 'client'}`);
    fs.writeFileSync(f(`${who}.ext`), who === 'server' ? 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' : 'extendedKeyUsage=clientAuth\n');
    ssl(
      'x509',
      '-req',
      '-in',
      `${who}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${who}.crt`,
      '-days',
      '1',
      '-extfile',
      `${who}.ext`,
    );
  }
}

/** Whether tritonclient.grpc reaches the server live over TLS; the error text otherwise. */
function live(port: number, withClientCert: boolean): string {
  const cert = withClientCert ? `, private_key="${f('client.key')}", certificate_chain="${f('client.crt')}"` : '';
  return python(`
import tritonclient.grpc as g
try:
    c = g.InferenceServerClient("localhost:${port}", ssl=True, root_certificates="${f('ca.crt')}"${cert})
    print("live" if c.is_server_live(client_timeout=10) else "not live")
except Exception as e:
    print("error")
`).trim();
}

beforeAll(() => {
  ensureBuilt();
  if (haveOpenssl) makeCertificates();
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

describe.skipIf(!haveOpenssl)('gRPC over TLS', () => {
  it('serves tritonclient over TLS with --grpc-use-ssl', async () => {
    const s = await startTritium({
      repos: [repo],
      args: ['--grpc-use-ssl=true', `--grpc-server-cert=${f('server.crt')}`, `--grpc-server-key=${f('server.key')}`],
    });
    try {
      expect(live(s.grpcPort!, false)).toBe('live');
      const infer = python(`
import numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("localhost:${s.grpcPort}", ssl=True, root_certificates="${f('ca.crt')}")
a = g.InferInput("INPUT0", [4], "FP32"); a.set_data_from_numpy(np.arange(4, dtype=np.float32))
b = g.InferInput("INPUT1", [4], "FP32"); b.set_data_from_numpy(np.ones(4, dtype=np.float32))
print(c.infer("add_sub", [a, b]).as_numpy("OUTPUT0").tolist())
`);
      expect(JSON.parse(infer)).toEqual([1, 2, 3, 4]);
    } finally {
      await stopAndExpectNoShm(s);
    }
  });

  it('requires a client certificate signed by --grpc-root-cert with --grpc-use-ssl-mutual', async () => {
    const s = await startTritium({
      repos: [repo],
      args: ['--grpc-use-ssl-mutual=true', `--grpc-server-cert=${f('server.crt')}`, `--grpc-server-key=${f('server.key')}`, `--grpc-root-cert=${f('ca.crt')}`],
    });
    try {
      expect(live(s.grpcPort!, true)).toBe('live');
      expect(live(s.grpcPort!, false)).toBe('error');
    } finally {
      await stopAndExpectNoShm(s);
    }
  });
});

describe('TLS flags that cannot work', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tritium.js'), ...args], { encoding: 'utf8', timeout: 30_000 });

  it('refuses --grpc-use-ssl without a certificate and key', () => {
    const r = cli('--model-repository=/nonexistent', '--grpc-use-ssl=true');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--grpc-use-ssl=true needs --grpc-server-cert and --grpc-server-key.');
  });

  it('refuses --grpc-use-ssl-mutual without a root certificate', () => {
    const r = cli('--model-repository=/nonexistent', '--grpc-use-ssl-mutual=true', '--grpc-server-cert=a', '--grpc-server-key=b');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--grpc-use-ssl-mutual=true needs --grpc-root-cert');
  });

  it('names a certificate file it cannot read, before loading models', async () => {
    const s = await startTritium({
      repos: [repo],
      args: ['--grpc-use-ssl=true', '--grpc-server-cert=/nonexistent.crt', `--grpc-server-key=${f('server.key')}`],
      expectFailure: true,
    });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toContain('cannot read --grpc-server-cert=/nonexistent.crt');
    expect(s.log()).not.toContain('loading: add_sub');
  });
});
