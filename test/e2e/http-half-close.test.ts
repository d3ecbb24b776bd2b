/**
 * A client that shuts down its sending side (FIN) once its request is out still gets the
 * answer; the connection closes after it. A client that half-closes in the middle of a body is
 * gone, and one that closed altogether is still found out and its request cancelled
 * (test/http/server.test.ts, "a client that disconnects aborts the request signal").
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['slow_execute'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** Writes `request`, half-closes, and collects what the server sends until it closes. */
function sendAndHalfClose(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.httpPort, '127.0.0.1', () => {
      socket.write(request);
      socket.end(); // FIN: nothing more from us
    });
    let got = '';
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

describe('HTTP half-close', () => {
  it('answers a whole request sent before the FIN, while the model is still working', async () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'MS', datatype: 'INT32', shape: [1], data: [300] },
        { name: 'VALUE', datatype: 'INT32', shape: [1], data: [41] },
      ],
    });
    const request = `POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const got = await sendAndHalfClose(request);
    // Interim 100 responses probe whether the client is still there (wire/connection.ts, onEnd).
    const final = got.replace(/^(HTTP\/1\.1 100 Continue\r\n\r\n)+/, '');
    expect(final.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(got).toContain('"data":[42]');
  }, 30_000);

  it('closes a connection whose client half-closed in the middle of a body', async () => {
    const request = 'POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"inputs":';
    expect(await sendAndHalfClose(request)).toBe('');
    // The server goes on serving.
    const res = await fetch(`${server.http}/v2/health/live`);
    expect(res.status).toBe(200);
  }, 30_000);
});
