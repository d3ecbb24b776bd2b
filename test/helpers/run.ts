/**
 * A child process run to completion without blocking the test worker's event loop. vitest's
 * worker answers its runner over that loop; a long spawnSync (a compile, an npm install) on a
 * loaded machine makes that RPC time out and fails the whole run.
 */
import { spawn, type SpawnOptions } from 'node:child_process';

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runAsync(cmd: string, args: string[], o: SpawnOptions & { timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...o, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 300_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: `${stderr}${err.message}` });
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * POSTs `body` with curl, the URL's path sent as written: no globbing of `[]{}` (-g), no
 * squashing of `/../` (--path-as-is). fetch() and the Python clients percent-encode what curl
 * leaves raw, so this is how a test puts `;`, `"` or `<` into a request path unencoded, as
 * Triton's own QA tests do. Resolves with the status and the body.
 */
export async function curlPost(url: string, body: string): Promise<{ status: number; body: string }> {
  const r = await runAsync('curl', ['-s', '-g', '--path-as-is', '-X', 'POST', '--data-binary', body, '-w', '\n%{http_code}', url], { timeoutMs: 120_000 });
  if (r.status !== 0) throw new Error(`curl ${url} failed (${r.status}): ${r.stderr}`);
  const cut = r.stdout.lastIndexOf('\n');
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}
