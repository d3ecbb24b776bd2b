/**
 * Node's input arena, per request: the allocs and releases StubChannel makes for a request's
 * input tensors (two, as add_sub's), over native/src/arena_core.h through the addon
 * (`createArena`), with eight larger blocks held throughout as under load. With `--ts-from
 * <commit>` the same loop also runs, alternated, over the TypeScript arena that commit had
 * (src/backends/python/ipc/arena.ts, taken out of git into a temporary directory), so the two are
 * measured side by side in one run.
 *
 *   npx vite-node bench/arena.ts -- [--n 2000000] [--rounds 3] [--ts-from <commit>]
 *
 * CPU is the process's user + system time per request (both are single-threaded loops).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNative } from '../src/backends/python/ipc/native.js';

interface ArenaLike {
  alloc(nbytes: number): number;
  release(offset: number): void;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argAt = (name: string) => process.argv.indexOf(`--${name}`);
const N = argAt('n') >= 0 ? Number(process.argv[argAt('n') + 1]) : 2_000_000;
const ROUNDS = argAt('rounds') >= 0 ? Number(process.argv[argAt('rounds') + 1]) : 3;
const tsFrom = argAt('ts-from') >= 0 ? process.argv[argAt('ts-from') + 1] : undefined;

const BASE = 4096 + 2 * 65536; // where n0's arena starts with the default rings
const SIZE = 1 << 20;

/** CPU nanoseconds per request (two allocs, two releases). */
function run(arena: ArenaLike): number {
  for (let i = 0; i < 8; i++) arena.alloc(4096);
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const a = arena.alloc(16);
    const b = arena.alloc(16);
    arena.release(a);
    arena.release(b);
  }
  const used = process.cpuUsage(t0);
  return ((used.user + used.system) * 1000) / N;
}

async function typescriptArena(commit: string): Promise<(base: number, size: number) => ArenaLike> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-arena-'));
  const source = execFileSync('git', ['show', `${commit}:src/backends/python/ipc/arena.ts`], { cwd: root, encoding: 'utf8' });
  // Its one import is BLOCK_ALIGN (64), now layout.h's.
  fs.writeFileSync(path.join(dir, 'arena.ts'), source.replace(/import \{ BLOCK_ALIGN \} from '.\/shm-layout.js';/, 'const BLOCK_ALIGN = 64;'));
  const { Arena } = (await import(path.join(dir, 'arena.ts'))) as { Arena: new (base: number, size: number) => ArenaLike };
  return (base, size) => new Arena(base, size);
}

const native = loadNative();
const makers: Array<[string, (base: number, size: number) => ArenaLike]> = [['native (arena_core.h)', (b, s) => native.createArena(b, s, 64)]];
if (tsFrom) makers.push([`TypeScript (${tsFrom})`, await typescriptArena(tsFrom)]);
const results = new Map<string, number[]>(makers.map(([name]) => [name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, make] of r % 2 === 0 ? makers : [...makers].reverse()) results.get(name)!.push(run(make(BASE, SIZE)));
}
for (const [name, ns] of results) console.log(`${name}: ${ns.map((v) => v.toFixed(0)).join(' / ')} ns CPU per request (2 allocs + 2 releases)`);
