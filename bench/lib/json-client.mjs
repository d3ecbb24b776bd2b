/**
 * Benchmark helper: JSON inference over one keep-alive HTTP connection (node:http), the client
 * side of the benchmarks that drive tritium without perf_analyzer.
 */
import http from 'node:http';

/** A client on its own keep-alive connection: `post(model, body)` resolves with the parsed answer. */
export function jsonClient(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (model, body) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: `/v2/models/${model}/infer`, agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            if (res.statusCode !== 200) reject(new Error(`${model}: ${res.statusCode} ${json.error}`));
            else resolve(json);
          });
        },
      );
      req.on('error', reject);
      req.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  return { post, close: () => agent.destroy() };
}
