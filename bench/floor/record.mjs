/**
 * Records the floor servers' canned answers from tritium itself: a recording proxy for each
 * protocol stands between perf_analyzer and a running tritium for one short run per model, and
 * keeps the last answer tritium gave to each request line (HTTP) or call path and model (gRPC),
 * byte for byte (canned.mjs). So the floor answers exactly what perf_analyzer asks at start
 * (server and model metadata, model config, statistics) and during the run (infer), with what
 * tritium answers for the same model.
 */
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { grpcKey, grpcModel } from './canned.mjs';
import { Http1Framer, requestKey } from './http1.mjs';

/** Header fields of a head's text, as [name, value] pairs (the request line dropped). */
function headerPairs(head) {
  return head
    .split('\r\n')
    .slice(1)
    .map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
    });
}

/** Sends one request to tritium; resolves with the whole answer as the bytes a client read. */
function forwardHttp(agent, port, req) {
  const body = req.body.length === 1 ? req.body[0] : Buffer.concat(req.body);
  const headers = {};
  for (const [name, value] of headerPairs(req.head)) {
    const lower = name.toLowerCase();
    // A chunked upload is forwarded with its length: tritium's answer does not depend on it.
    if (lower === 'transfer-encoding' || lower === 'content-length' || lower === 'expect' || lower === 'connection') continue;
    headers[name] = value;
  }
  if (body.length > 0 || req.method === 'POST') headers['Content-Length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const up = http.request({ host: '127.0.0.1', port, method: req.method, path: req.target, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let head = `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n`;
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i];
          if (/^(connection|keep-alive|date)$/i.test(name)) continue;
          head += `${name}: ${res.rawHeaders[i + 1]}\r\n`;
        }
        resolve(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), ...chunks]));
      });
      res.on('error', reject);
    });
    up.on('error', reject);
    up.end(body);
  });
}

/** An HTTP/1.1 proxy to tritium's `upstreamPort` that keeps the last answer per request line in `table`. */
async function httpRecorder(upstreamPort, table) {
  const agent = new http.Agent({ keepAlive: true });
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    // Answers leave in request order, whatever order tritium's come back in.
    let queue = Promise.resolve();
    const framer = new Http1Framer(
      (req) => {
        const answer = forwardHttp(agent, upstreamPort, req);
        queue = queue.then(async () => {
          const bytes = await answer;
          table[requestKey(req.method, req.target)] = bytes.toString('base64');
          if (!socket.destroyed) socket.write(bytes);
        });
        queue.catch(() => socket.destroy());
      },
      () => socket.write('HTTP/1.1 100 Continue\r\n\r\n'),
    );
    socket.on('data', (c) => framer.push(c));
    socket.on('error', () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => {
    agent.destroy();
    return new Promise((r) => server.close(r));
  };
  return { port: server.address().port, close };
}

/** A gRPC proxy to tritium's `upstreamPort` that keeps the last answer per path and model in `table`. */
async function grpcRecorder(upstreamPort, table) {
  const client = http2.connect(`http://127.0.0.1:${upstreamPort}`);
  client.on('error', () => {});
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('error', () => {});
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      const fwd = { ':method': 'POST', ':path': headers[':path'] };
      for (const [k, v] of Object.entries(headers)) if (!k.startsWith(':') && k !== 'host') fwd[k] = v;
      const up = client.request(fwd);
      let resHeaders;
      const data = [];
      let trailers = {};
      up.on('response', (h) => (resHeaders = h));
      up.on('data', (c) => data.push(c));
      up.on('trailers', (t) => (trailers = t));
      up.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
      up.on('end', () => {
        const keep = (h) => Object.fromEntries(Object.entries(h).filter(([k]) => k !== 'date' && (k === ':status' || !k.startsWith(':'))));
        const answer = { headers: keep(resHeaders ?? { ':status': 200 }), data: Buffer.concat(data), trailers: keep(trailers) };
        table[grpcKey(headers[':path'], grpcModel(body))] = { ...answer, data: answer.data.toString('base64') };
        if (answer.data.length === 0 && Object.keys(answer.trailers).length === 0) {
          stream.respond(answer.headers, { endStream: true }); // trailers-only (an error)
          return;
        }
        stream.respond(answer.headers, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers(answer.trailers));
        stream.end(answer.data);
      });
      up.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => {
    client.close();
    return new Promise((r) => server.close(r));
  };
  return { port: server.address().port, close };
}

/**
 * Records the canned answers into `file`: for every model and protocol, `runClient(protocol,
 * model, port)` (a short perf_analyzer run) goes through a recording proxy to tritium's ports.
 * Returns the keys recorded, per protocol.
 */
export async function recordCanned({ httpPort, grpcPort, models, runClient, file }) {
  const canned = { http: {}, grpc: {} };
  for (const [protocol, upstream, make] of [
    ['http', httpPort, httpRecorder],
    ['grpc', grpcPort, grpcRecorder],
  ]) {
    const proxy = await make(upstream, canned[protocol]);
    try {
      for (const model of models) await runClient(protocol, model, proxy.port);
    } finally {
      await proxy.close();
    }
  }
  for (const model of models) {
    if (!canned.http[requestKey('POST', `/v2/models/${model}/infer`)]) throw new Error(`recording: no HTTP infer answer for ${model}`);
    if (!canned.grpc[grpcKey('/inference.GRPCInferenceService/ModelInfer', model)]) throw new Error(`recording: no gRPC ModelInfer answer for ${model}`);
  }
  fs.writeFileSync(file, `${JSON.stringify(canned, null, 1)}\n`);
  return { http: Object.keys(canned.http), grpc: Object.keys(canned.grpc) };
}
