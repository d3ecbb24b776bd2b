/**
 * writeToSocket on real loopback TCP connections: the bytes straight to the kernel when the
 * socket has nothing queued, the rest through Node's write path behind them, in order, and the
 * callback as socket.write gives it (after the call returns, once the bytes are written or the
 * connection failed).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { writeToSocket } from '../../src/frontends/socket-write.js';

const open: net.Socket[] = [];
let server: net.Server | undefined;

afterEach(async () => {
  for (const s of open.splice(0)) s.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A connected pair: [the server's socket, the client's socket] (client paused). */
async function pair(): Promise<[net.Socket, net.Socket]> {
  const accepted = new Promise<net.Socket>((resolve) => {
    server = net.createServer((s) => resolve(s));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const port = (server!.address() as net.AddressInfo).port;
  const client = net.connect(port, '127.0.0.1');
  client.pause();
  await new Promise<void>((resolve) => client.once('connect', resolve));
  const s = await accepted;
  open.push(s, client);
  return [s, client];
}

/** Reads `n` bytes from the client side. */
function readBytes(client: net.Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    client.on('data', (d: Buffer) => {
      parts.push(d);
      got += d.length;
      if (got >= n) resolve(Buffer.concat(parts));
    });
    client.once('error', reject);
    client.resume();
  });
}

function pattern(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

describe('writeToSocket', () => {
  it('hands a small answer to the kernel at once and calls back after returning', async () => {
    const [s, client] = await pair();
    const bytes = pattern(300, 1);
    let called = false;
    const done = new Promise<void>((resolve) =>
      writeToSocket(s, bytes, () => {
        called = true;
        resolve();
      }),
    );
    // Written through the descriptor: nothing waits in Node's queue, and the callback is later.
    expect(s.writableLength).toBe(0);
    expect(called).toBe(false);
    await done;
    expect(await readBytes(client, 300)).toEqual(bytes);
  });

  it('queues what the kernel does not take behind what it took, and later writes behind that', async () => {
    const [s, client] = await pair();
    // Far more than a loopback socket buffers while the client does not read.
    const first = pattern(32 << 20, 2);
    const second = pattern(1000, 3);
    const order: string[] = [];
    const firstDone = new Promise<void>((resolve) =>
      writeToSocket(s, first, () => {
        order.push('first');
        resolve();
      }),
    );
    expect(s.writableLength).toBeGreaterThan(0);
    expect(s.writableLength).toBeLessThan(first.length);
    const secondDone = new Promise<void>((resolve) =>
      writeToSocket(s, second, () => {
        order.push('second');
        resolve();
      }),
    );
    const received = await readBytes(client, first.length + second.length);
    await Promise.all([firstDone, secondDone]);
    expect(order).toEqual(['first', 'second']);
    expect(received.length).toBe(first.length + second.length);
    expect(received.subarray(0, first.length).equals(first)).toBe(true);
    expect(received.subarray(first.length).equals(second)).toBe(true);
  });

  it('goes through Node while the socket is corked, so the corked bytes keep their place', async () => {
    const [s, client] = await pair();
    s.cork();
    s.write(Buffer.from('head:'));
    writeToSocket(s, Buffer.from('body'));
    s.uncork();
    expect((await readBytes(client, 9)).toString()).toBe('head:body');
  });

  it('leaves a write to a connection the peer reset to Node, which reports it', async () => {
    const [s, client] = await pair();
    client.resetAndDestroy();
    await new Promise<void>((resolve) =>
      s
        .once('end', resolve)
        .once('error', () => resolve())
        .resume(),
    );
    const errors: unknown[] = [];
    s.on('error', (e) => errors.push(e));
    // The first send after an RST fails with EPIPE or ECONNRESET; Node's write path then fails the socket.
    const result = await new Promise<unknown>((resolve) => {
      writeToSocket(s, pattern(100, 4), (err?: unknown) => resolve(err ?? 'no error'));
      setTimeout(() => resolve('no callback'), 2000).unref();
    });
    expect(result).not.toBe('no callback');
    if (result === 'no error') {
      // The kernel took the bytes before it noticed the reset: the next write fails.
      await new Promise<void>((resolve) => writeToSocket(s, pattern(100, 5), () => resolve()));
    }
    await new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));
    expect(s.destroyed).toBe(true);
  });
});
