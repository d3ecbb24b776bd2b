/**
 * Classification with labels (docs/protocol-notes.md, "Classification"): an output's
 * `label_filename` is read at load, and top-K results over HTTP (`parameters.classification`)
 * and gRPC (tritonclient's `class_count`) are BYTES `value:index:label`, as tritonserver 2.51
 * answers for the same model and request; an index whose label line is empty has no label.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, python, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let s: Tritium;
const repo = makeRepo(['label_classes']);

async function classify(data: number[], rows: number, k: number) {
  const res = await fetch(`${s.http}/v2/models/label_classes/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [{ name: 'IN', shape: [rows, 4], datatype: 'FP32', data }],
      outputs: [{ name: 'OUT', parameters: { classification: k } }],
    }),
  });
  expect(res.status).toBe(200);
  return (await res.json()).outputs[0];
}

beforeAll(async () => {
  s = await startTritium({ repos: [repo] });
});
afterAll(async () => {
  await stopAndExpectNoShm(s);
  fs.rmSync(repo, { recursive: true, force: true });
});

describe('classification labels', () => {
  it('adds the label of each class over HTTP, per batch item', async () => {
    const out = await classify([0.1, 0.7, 0.05, 0.15, 5, 1, 9, 2], 2, 3);
    expect(out).toEqual({
      name: 'OUT',
      datatype: 'BYTES',
      shape: [2, 3],
      data: ['0.700000:1:dog', '0.150000:3:bird', '0.100000:0:cat', '9.000000:2', '5.000000:0:cat', '2.000000:3:bird'],
    });
  });

  it('gives every class when more are asked for than exist', async () => {
    const out = await classify([1, 2, 3, 4], 1, 9);
    expect(out.shape).toEqual([1, 4]);
    expect(out.data).toEqual(['4.000000:3:bird', '3.000000:2', '2.000000:1:dog', '1.000000:0:cat']);
  });

  it('adds the labels over gRPC (tritonclient class_count)', () => {
    const got = python(`
import json, numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
i = g.InferInput("IN", [1, 4], "FP32"); i.set_data_from_numpy(np.array([[1, 2, 3, 4]], dtype=np.float32))
r = c.infer("label_classes", [i], outputs=[g.InferRequestedOutput("OUT", class_count=2)])
o = r.get_response().outputs[0]
print(json.dumps({"data": [x.decode() for x in r.as_numpy("OUT").ravel()], "datatype": o.datatype, "shape": list(o.shape)}))
`);
    expect(JSON.parse(got)).toEqual({ data: ['4.000000:3:bird', '3.000000:2'], datatype: 'BYTES', shape: [1, 2] });
  });
});

describe('a label file that cannot be read', () => {
  it('fails the load with Triton’s text', async () => {
    const bad = makeRepo([{ from: path.join(repo, 'label_classes'), name: 'no_labels' }]);
    fs.rmSync(path.join(bad, 'no_labels', 'labels.txt'));
    const t = await startTritium({ repos: [bad], expectFailure: true });
    const { code } = await t.exited;
    expect(code).not.toBe(0);
    expect(t.log()).toContain(`failed to open text file for read ${path.join(bad, 'no_labels', 'labels.txt')}: No such file or directory`);
    fs.rmSync(bad, { recursive: true, force: true });
  });

  it('refuses a label_filename that leaves the model directory (beyond Triton)', async () => {
    const bad = makeRepo([{ from: path.join(repo, 'label_classes'), name: 'escaping_labels' }]);
    const cfg = path.join(bad, 'escaping_labels', 'config.pbtxt');
    fs.writeFileSync(cfg, fs.readFileSync(cfg, 'utf8').replace(/label_filename: "labels.txt"/, 'label_filename: "../../etc/hostname"'));
    const t = await startTritium({ repos: [bad], expectFailure: true });
    await t.exited;
    expect(t.log()).toContain("label_filename '../../etc/hostname' points outside the model directory");
    fs.rmSync(bad, { recursive: true, force: true });
  });
});
