/**
 * Restricted APIs (`--http-restricted-api`, `--grpc-restricted-protocol`): the API groups named
 * answer only requests carrying the header with its value, in tritonserver 2.51's words (HTTP
 * 403; gRPC UNAVAILABLE, header `triton-grpc-protocol-<key>`); other groups stay open.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, python, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let s: Tritium;
const repo = makeRepo(['add_sub']);
const RESTRICT = 'model-repository,health:admin-key=secret';

beforeAll(async () => {
  s = await startTritium({ repos: [repo], args: [`--http-restricted-api=${RESTRICT}`, `--grpc-restricted-protocol=${RESTRICT}`] });
});
afterAll(async () => {
  await stopAndExpectNoShm(s);
  fs.rmSync(repo, { recursive: true, force: true });
});

describe('--http-restricted-api', () => {
  it('answers 403 without the header, or with another value', async () => {
    for (const headers of [{}, { 'admin-key': 'wrong' }] as Array<Record<string, string>>) {
      for (const [method, url] of [
        ['GET', '/v2/health/live'],
        ['GET', '/v2/models/add_sub/ready'],
        ['POST', '/v2/repository/index'],
      ] as const) {
        const res = await fetch(`${s.http}${url}`, { method, headers });
        expect([url, res.status, await res.json()]).toEqual([url, 403, { error: "This API is restricted, expecting header 'admin-key'" }]);
      }
    }
  });

  it('serves the restricted APIs with the header, and the others without it', async () => {
    expect((await fetch(`${s.http}/v2/health/live`, { headers: { 'admin-key': 'secret' } })).status).toBe(200);
    expect((await fetch(`${s.http}/v2/repository/index`, { method: 'POST', headers: { 'Admin-Key': 'secret' } })).status).toBe(200);
    expect((await fetch(`${s.http}/v2/models/add_sub`)).status).toBe(200);
    expect((await fetch(`${s.http}/v2/models/add_sub/config`)).status).toBe(200);
  });
});

describe('--grpc-restricted-protocol', () => {
  it('refuses calls without triton-grpc-protocol-<key>, and serves them with it', () => {
    const out = python(`
import json, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
r = {}
for name, call in [("live", lambda h: c.is_server_live(headers=h)), ("index", lambda h: c.get_model_repository_index(headers=h, as_json=True))]:
    for label, h in [("none", None), ("plain", {"admin-key": "secret"}), ("prefixed", {"triton-grpc-protocol-admin-key": "secret"})]:
        try:
            call(h)
            r[name + "_" + label] = "ok"
        except Exception as e:
            r[name + "_" + label] = [e.status(), e.message()]
r["metadata"] = c.get_model_metadata("add_sub").name
print(json.dumps(r))
`);
    const refused = ['StatusCode.UNAVAILABLE', "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'"];
    expect(JSON.parse(out)).toEqual({
      live_none: refused,
      live_plain: refused,
      live_prefixed: 'ok',
      index_none: refused,
      index_plain: refused,
      index_prefixed: 'ok',
      metadata: 'add_sub',
    });
  });
});
