#!/usr/bin/env node
/**
 * The HTTP floor: a KServe v2 HTTP/1.1 server on node:net that frames requests (http1.mjs) and
 * answers each with the canned bytes tritium sent for the same request line (canned.mjs), with
 * no parsing of the body, no validation, no model. What a request costs here is what any server
 * on Node's sockets pays for it on this machine: reads, framing, one write — by the same
 * send(2) of the addon tritium's answers take (src/frontends/socket-write.ts), so that the
 * floor stays the cheapest way to answer, not Node's default one.
 *
 *   node bench/floor/http-floor.mjs <canned.json>
 *
 * Started by bench/floor.mjs with an IPC channel: sends { port } once it listens, answers
 * { op: 'count' } with { infer, other } (requests answered so far) and exits on { op: 'exit' }.
 */
import net from 'node:net';
import { writeToSocket } from '../../dist/frontends/socket-write.js';
import { advanceStats, loadCanned, serveParent } from './canned.mjs';
import { Http1Framer, requestKey } from './http1.mjs';

const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');

function notFound(key) {
  const body = JSON.stringify({ error: `the floor has no canned answer for ${key}` });
  return Buffer.from(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/**
 * A statistics answer whose counts follow this server's (canned.mjs, advanceStats): built per
 * request from the recorded one. perf_analyzer asks a few times per window, so its cost is
 * not in the floor's figures.
 */
function statsAnswer(recorded) {
  const text = recorded.toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split).replace(/\r\ncontent-length:[^\r]*/i, '');
  const body = Buffer.from(JSON.stringify(advanceStats(JSON.parse(recorded.subarray(split + 4).toString('utf8')), counts.infer)));
  return Buffer.concat([Buffer.from(`${head}\r\nContent-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
}

const file = process.argv[2];
if (!file) throw new Error('usage: node bench/floor/http-floor.mjs <canned.json>');
const table = loadCanned(file).http;
const counts = { infer: 0, other: 0 };

/** One framed request: the canned bytes for its request line, in one write. */
function answer(socket, req) {
  const key = requestKey(req.method, req.target);
  let bytes = table.get(key);
  if (bytes !== undefined && req.target.endsWith('/stats')) bytes = statsAnswer(bytes);
  if (req.method === 'POST' && req.target.endsWith('/infer')) counts.infer++;
  else counts.other++;
  if (bytes === undefined) process.stderr.write(`http-floor: no canned answer for ${key}\n`);
  writeToSocket(socket, bytes ?? notFound(key));
  if (/\r\nconnection:[ \t]*close/i.test(req.head)) socket.end();
}

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  const framer = new Http1Framer(
    (req) => answer(socket, req),
    () => socket.write(CONTINUE),
  );
  socket.on('data', function readRequests(chunk) {
    try {
      framer.push(chunk);
    } catch (err) {
      process.stderr.write(`http-floor: ${err.message}\n`);
      socket.destroy();
    }
  });
  socket.on('error', () => socket.destroy());
});

serveParent(server, counts);
