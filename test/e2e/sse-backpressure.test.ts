/**
 * generate_stream with a client that never reads: a decoupled model that answers faster than any
 * client reads is not buffered without end. Past the bound of unread bytes the request is
 * cancelled (the model sees it) and the connection closed; the server's memory stays bounded.
 */
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1024 * 1024;
let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['decoupled_flood'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('generate_stream with a client that never reads', () => {
  it('cancels the request and closes the connection past the bound, with memory bounded', async () => {
    const pid = server.proc.pid!;
    const before = rssBytes(pid);
    const body = JSON.stringify({ COUNT: MIB / 4, N: 100_000 }); // up to 100000 responses of 1 MiB
    const socket = net.connect(server.httpPort, '127.0.0.1');
    socket.on('error', () => {});
    socket.pause(); // never read
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.write(
      `POST /v2/models/decoupled_flood/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    let peak = before;
    const deadline = Date.now() + 40_000;
    while (!server.log().includes('decoupled_flood: cancelled after') && Date.now() < deadline) {
      peak = Math.max(peak, rssBytes(pid));
      await sleep(50);
    }
    expect(server.log()).toMatch(/decoupled_flood: cancelled after \d+/);
    expect(server.log()).toContain('the client does not read its responses');
    expect(peak - before).toBeLessThan(400 * MIB);
    socket.resume(); // drain what the kernel holds; the server has closed its side
    const closeDeadline = Date.now() + 10_000;
    while (!closed && Date.now() < closeDeadline) await sleep(50);
    expect(closed).toBe(true);
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
  }, 90_000);
});
