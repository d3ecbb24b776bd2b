/**
 * @module backends/onnx/worker-source
 * The code of the worker thread that owns one onnxruntime session (see runner.ts). It is kept
 * as source text and started with `eval: true` rather than as a separate module file, so the
 * same code runs from compiled `dist/` and from the TypeScript sources under the test runner;
 * onnxruntime-node is required by the absolute path the parent resolved, so the server's
 * working directory does not matter.
 *
 * Protocol (parent → worker): { t: 'run', id, feeds, fetches } | { t: 'close' }.
 * (worker → parent): { t: 'ready', info } | { t: 'load_err', msg } once, then
 * { t: 'done', id, outs } | { t: 'err', id, msg } per run.
 */
export const WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session;

function meta(list) {
  return list.map((m) => ({
    name: m.name,
    isTensor: m.isTensor,
    type: m.isTensor ? m.type : undefined,
    shape: m.isTensor ? m.shape.map((d) => (typeof d === 'number' ? d : -1)) : [],
  }));
}

function message(e) {
  return e && e.message ? String(e.message) : String(e);
}

async function load() {
  try {
    session = await ort.InferenceSession.create(workerData.modelPath, workerData.options);
    parentPort.postMessage({ t: 'ready', info: { inputs: meta(session.inputMetadata), outputs: meta(session.outputMetadata) } });
  } catch (e) {
    parentPort.postMessage({ t: 'load_err', msg: message(e) });
  }
}

async function run(m) {
  let res;
  try {
    const feeds = {};
    for (const name of Object.keys(m.feeds)) {
      const w = m.feeds[name];
      feeds[name] = new ort.Tensor(w.type, w.data, w.dims);
    }
    res = await session.run(feeds, m.fetches);
  } catch (e) {
    parentPort.postMessage({ t: 'err', id: m.id, msg: message(e) });
    return;
  }
  const outs = {};
  const transfer = new Set();
  for (const name of Object.keys(res)) {
    const t = res[name];
    const data = t.data;
    outs[name] = { type: t.type, dims: Array.from(t.dims), data };
    if (!Array.isArray(data)) transfer.add(data.buffer);
  }
  try {
    // Output buffers move to the parent without a copy.
    parentPort.postMessage({ t: 'done', id: m.id, outs }, [...transfer]);
  } catch {
    // A buffer that cannot be detached (external memory) is copied instead.
    parentPort.postMessage({ t: 'done', id: m.id, outs });
  }
}

parentPort.on('message', (m) => {
  if (m.t === 'run') {
    void run(m);
  } else if (m.t === 'close') {
    Promise.resolve(session && session.release())
      .catch(() => {})
      .then(() => parentPort.close());
  }
});

void load();
`;
