/**
 * @module test/helpers/server-memory
 * A server's memory after full garbage collections, read through its inspector (start it with
 * `NODE_OPTIONS: '--inspect=127.0.0.1:0'`), so that leaks are told apart from garbage not yet
 * collected. Used by the fuzz suites.
 */
import { spawn } from 'node:child_process';

export interface MemoryUsage {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/**
 * Runs two full garbage collections in the server through its inspector, then reads
 * process.memoryUsage(). Node 20 has a WebSocket client only behind a flag, hence the helper
 * process.
 */
export async function memoryAfterGc(serverLog: string): Promise<MemoryUsage> {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(serverLog)?.[1];
  if (!url) throw new Error('no inspector URL in the server log');
  const script = `
    const ws = new WebSocket(process.argv[1]);
    const pending = new Map();
    let id = 0;
    const call = (method, params = {}) => new Promise((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
    ws.onmessage = (e) => { const m = JSON.parse(e.data); pending.get(m.id)?.(m); };
    ws.onopen = async () => {
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const r = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
      console.log(r.result.result.value);
      ws.close();
    };`;
  const out = await new Promise<string>((resolve, reject) => {
    // WebSocket is global from Node 22; Node 20 needs the flag.
    const flags = typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'function' ? [] : ['--experimental-websocket'];
    const p = spawn(process.execPath, [...flags, '--no-warnings', '-e', script, url]);
    let text = '';
    p.stdout.on('data', (d) => (text += d));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`inspector helper exited ${code}`))));
  });
  return JSON.parse(out) as MemoryUsage;
}
