/**
 * A container engine for test/e2e/container-image.test.ts: podman or docker, whichever answers
 * first, and the options this host needs to run containers with it. Everything here only asks the
 * engine; nothing is built or started.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runAsync } from './run.js';

export interface Engine {
  /** podman or docker (the binary's name on PATH, or $TRITIUM_CONTAINER_ENGINE). */
  bin: string;
  kind: 'podman' | 'docker';
  /** e.g. "podman 4.3.1", "docker 28.2.2 (server)". */
  version: string;
  /** Options before the subcommand (podman --runtime runc) and of build/run (--ulimit ...). */
  global: string[];
  limits: string[];
}

function onPath(bin: string): string | undefined {
  if (bin.includes('/')) return fs.existsSync(bin) ? bin : undefined;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = path.join(dir || '.', bin);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

const firstLine = (s: string) =>
  s
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0) ?? '';

/**
 * The first engine that answers `info` (a docker client without a reachable daemon, or a podman
 * that cannot set up its user namespaces, does not), or why there is none.
 */
export function findEngine(): { engine: Engine } | { reason: string } {
  const wanted = process.env.TRITIUM_CONTAINER_ENGINE;
  const names = wanted ? [wanted] : ['podman', 'docker'];
  const why: string[] = [];
  for (const name of names) {
    const bin = onPath(name);
    if (!bin) {
      why.push(`no ${name} on PATH`);
      continue;
    }
    const kind = path.basename(name).startsWith('docker') ? 'docker' : 'podman';
    const format = kind === 'podman' ? '{{.Version.Version}}' : '{{.ServerVersion}}';
    const r = spawnSync(bin, ['info', '--format', format], { encoding: 'utf8', timeout: 30_000 });
    if (r.status === 0 && r.stdout.trim() !== '') {
      const version = kind === 'podman' ? `podman ${r.stdout.trim()}` : `docker ${r.stdout.trim()} (server)`;
      return { engine: { bin, kind, version, global: [], limits: [] } };
    }
    why.push(`\`${name} info\` failed: ${firstLine(r.stderr ?? '') || r.error?.message || `exit ${r.status}`}`);
  }
  return { reason: `no container engine can run here (${why.join('; ')})` };
}

/** The images a Dockerfile's FROM lines name, with its ARG defaults filled in (stages left out). */
export function baseImages(dockerfile: string): string[] {
  const args = new Map<string, string>();
  const stages = new Set<string>();
  const images: string[] = [];
  for (const raw of fs.readFileSync(dockerfile, 'utf8').split('\n')) {
    const line = raw.trim();
    const arg = /^ARG\s+(\w+)=(\S+)/i.exec(line);
    if (arg && images.length === 0) args.set(arg[1]!, arg[2]!.replace(/^["']|["']$/g, ''));
    const from = /^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (!from) continue;
    const image = from[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args.get(a ?? b) ?? '');
    if (!stages.has(image) && !images.includes(image)) images.push(image);
    if (from[2]) stages.add(from[2]);
  }
  return images;
}

/** docker.io/library/node:20 for node:20, as both engines store it. */
export function qualified(image: string): string {
  const first = image.split('/')[0]!;
  if (!image.includes('/')) return `docker.io/library/${image}`;
  if (!first.includes('.') && !first.includes(':') && first !== 'localhost') return `docker.io/${image}`;
  return image;
}

export function imageExists(e: Engine, image: string): boolean {
  return spawnSync(e.bin, [...e.global, 'image', 'inspect', '--format', '{{.Id}}', image], { timeout: 30_000 }).status === 0;
}

/** This process's hard limits, which an unprivileged sandbox keeps containers from raising. */
function hostLimits(): string[] {
  try {
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    const hard = (label: string) => Number(new RegExp(`^${label}\\s+\\S+\\s+(\\d+)`, 'm').exec(limits)?.[1]);
    const nofile = hard('Max open files');
    // conmon and runc take pid_max as their own process limit where theirs is higher.
    const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
    const nproc = Math.min(hard('Max processes'), pidMax);
    if (!(nofile > 0 && nproc > 0)) return [];
    return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
  } catch {
    return [];
  }
}

/**
 * Sets `global` and `limits` to the first choice with which `run --rm <image> true` works: the
 * engine's defaults; this process's own rlimits (the engines raise RLIMIT_NOFILE and RLIMIT_NPROC
 * past them by default, which fails without CAP_SYS_RESOURCE); podman with runc in place of crun
 * (crun 1.8 refuses hosts whose cgroup v2 hierarchy has controllers beside v1's). Returns what
 * each failed try said when none works.
 */
export async function probeRun(e: Engine, image: string): Promise<string | undefined> {
  const limits = hostLimits();
  const tries: Array<{ global: string[]; limits: string[] }> = [{ global: [], limits: [] }];
  if (limits.length > 0) tries.push({ global: [], limits });
  if (e.kind === 'podman' && onPath('runc')) tries.push({ global: ['--runtime', 'runc'], limits });
  const errors: string[] = [];
  for (const t of tries) {
    const r = await runAsync(e.bin, [...t.global, 'run', '--rm', ...t.limits, image, 'true'], { timeoutMs: 120_000 });
    if (r.status === 0) {
      e.global = t.global;
      e.limits = t.limits;
      return undefined;
    }
    const last = r.stderr.trim().split('\n').pop() ?? '';
    errors.push(`${[...t.global, 'run', ...t.limits].join(' ')}: ${last || `exit ${r.status}`}`);
  }
  return errors.join('; ');
}
