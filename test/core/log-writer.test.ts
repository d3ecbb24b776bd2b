// The server log's writer against real file descriptors: a file, and a FIFO whose reader is
// slow, stops reading, or goes away (what stderr is when the server's output is piped).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogWriter } from '../../src/core/log-writer.js';

let dir: string;
const opened: number[] = [];
const open = (p: string, flags: number) => {
  const fd = fs.openSync(p, flags);
  opened.push(fd);
  return fd;
};

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-log-writer-'));
});

afterEach(() => {
  for (const fd of opened.splice(0)) {
    try {
      fs.closeSync(fd);
    } catch {
      /* closed by the test */
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A FIFO with a non-blocking reader and writer (the writer end is what stderr would be). */
function fifo(): { reader: number; writer: number } {
  const p = path.join(dir, 'fifo');
  execFileSync('mkfifo', [p]);
  const reader = open(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writer = open(p, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  return { reader, writer };
}

function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(1 << 16);
  for (;;) {
    let n = 0;
    try {
      n = fs.readSync(fd, buf);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw err;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString();
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`);

describe('LogWriter', () => {
  it('writes every line, in order, asynchronously', async () => {
    const file = path.join(dir, 'log');
    const fd = open(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND);
    const w = new LogWriter(fd, { maxPending: 1 << 20 });
    for (const l of lines(0, 500)) expect(w.write(l)).toBe(true);
    await until(() => fs.readFileSync(file, 'utf8').endsWith('line 499\n'));
    expect(fs.readFileSync(file, 'utf8')).toBe(lines(0, 500).join(''));
  });

  it('the exit flush writes the bytes the fd refused first, then the queue behind them', async () => {
    const { reader, writer } = fifo();
    const w = new LogWriter(writer, { maxPending: 1 << 20 });
    fs.writeSync(writer, Buffer.alloc(65_536, 0x2e)); // the pipe is full
    w.write('first\n'); // refused (EAGAIN): waits to be tried again
    await new Promise((r) => setTimeout(r, 50));
    w.write('second\n');
    w.write('third\n');
    // Room again, and the flush before the retry timer can run (as in an exit handler).
    expect(readAll(reader)).toHaveLength(65_536);
    w.flushSync();
    expect(readAll(reader)).toBe('first\nsecond\nthird\n');
    expect(w.broken).toBe(false);
  });

  it('holds at most maxPending unwritten bytes while the reader takes nothing, then delivers them in order', async () => {
    const { reader, writer } = fifo();
    const w = new LogWriter(writer, { maxPending: 200_000 });
    const line = `${'x'.repeat(99)}\n`;
    let accepted = 0;
    let dropped = 0;
    // The pipe takes 64 KiB; then the writer holds up to 200 000 bytes and drops the rest.
    for (let i = 0; i < 5000; i++) {
      if (w.write(line)) accepted++;
      else dropped++;
      if (i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    expect(dropped).toBeGreaterThan(0);
    expect(accepted * 100).toBeLessThanOrEqual(200_000 + 65_536 + 100);
    let got = '';
    await until(() => {
      got += readAll(reader);
      return got.length === accepted * 100;
    });
    expect(got).toBe(line.repeat(accepted));
    expect(w.broken).toBe(false);
  });

  it('stops at the first write that fails for good (the reader is gone) and the exit flush returns at once', async () => {
    const { reader, writer } = fifo();
    const w = new LogWriter(writer, { maxPending: 1 << 20 });
    fs.closeSync(reader);
    w.write('lost\n');
    await until(() => w.broken);
    expect(w.write('later\n')).toBe(false);
    const t0 = Date.now();
    w.flushSync();
    expect(Date.now() - t0).toBeLessThan(500);
  });

  it('gives up the exit flush after exitFlushMs while the reader takes nothing', () => {
    const { writer } = fifo();
    const w = new LogWriter(writer, { maxPending: 1 << 20, exitFlushMs: 200 });
    fs.writeSync(writer, Buffer.alloc(65_536)); // the pipe is full
    w.write('on its way\n'); // handed to an asynchronous write
    w.write('queued\n');
    const t0 = Date.now();
    w.flushSync();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(w.broken).toBe(true);
  });

  it('ends the exit flush at EPIPE when the reader went away before any write failed', () => {
    const { reader, writer } = fifo();
    const w = new LogWriter(writer, { maxPending: 1 << 20 });
    w.write('on its way\n');
    w.write('queued\n');
    fs.closeSync(reader);
    const t0 = Date.now();
    w.flushSync();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(w.broken).toBe(true);
  });
});
