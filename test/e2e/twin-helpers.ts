/**
 * Shared by the end-to-end suites (gRPC, decoupled, generate, perf_analyzer): repository
 * assembly with non-decoupled twins of decoupled test models, and a wait for side-channel files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeRepo } from '../helpers/server.js';

/**
 * A repository of `models`, plus for each `twins` entry a copy of a decoupled test model named
 * `<model>_sync` whose config says `decoupled: false` (the model code reads the policy).
 */
export function repoWithTwins(models: string[], twins: string[] = []): string {
  const repo = makeRepo([...models, ...twins]);
  for (const name of twins) {
    const to = path.join(repo, `${name}_sync`);
    fs.cpSync(path.join(repo, name), to, { recursive: true });
    const cfg = path.join(to, 'config.pbtxt');
    const text = fs.readFileSync(cfg, 'utf8');
    if (!text.includes('decoupled: true')) throw new Error(`${name} is not decoupled`);
    fs.writeFileSync(cfg, text.replace('decoupled: true', 'decoupled: false'));
  }
  return repo;
}

/** Polls for a file and returns its JSON (the cancel_loop model's marker), or undefined. */
export async function waitForJson(file: string, timeoutMs = 15_000): Promise<Record<string, unknown> | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), prefix));
}
