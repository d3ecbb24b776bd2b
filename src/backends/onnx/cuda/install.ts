/**
 * @module backends/onnx/cuda/install
 * `tritium install-cuda`: completes onnxruntime-node with its CUDA execution provider from the
 * package registries alone. onnxruntime-node's own install step fetches the provider from NuGet,
 * which many hosts cannot reach; PyPI's `onnxruntime-gpu` wheel of the same version carries the
 * same provider libraries, and its `cuda` and `cudnn` extras name the nvidia-* wheels that carry
 * the CUDA user-space libraries they need (the host then needs only the NVIDIA driver).
 *
 *   pip install --no-deps --target <staging> onnxruntime-gpu==<onnxruntime-node's version>
 *     → libonnxruntime_providers_{shared,cuda}.so copied next to onnxruntime-node's library
 *       (where onnxruntime looks for providers); the TensorRT provider too when the host has
 *       TensorRT's libraries (they are not on PyPI as plain wheels)
 *   pip install --target <staging> <the wheel's cuda and cudnn extras>
 *     → moved to cuda-libs/ beside it; every library the provider needs (DT_NEEDED, read from
 *       the files) must be there or on the host, else the install fails naming what is missing
 *   tritium-cuda.json (manifest.ts) → the libraries to preload, dependencies first
 *
 * pip is used rather than fetching wheels directly so that the user's index, mirror, proxy and
 * cache settings apply. Nothing is changed until everything is downloaded and checked.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Errors } from '../../../core/errors.js';
import { ortBinaryDir } from '../ort-location.js';
import { readDynamic } from './elf.js';
import { type CudaManifest, LIBRARIES_DIR, MANIFEST_FILE, readManifest, writeManifest } from './manifest.js';
import { loadSharedLibrary, preloadCudaLibraries } from './preload.js';

export interface CudaInstallOptions {
  /** The interpreter whose pip downloads the wheels. */
  python: string;
  /** The onnxruntime-node package to complete. */
  onnxruntimeDir: string;
  /** Progress and results, one line each. */
  say: (line: string) => void;
}

export interface CudaInstallResult {
  manifest: CudaManifest;
  /** Libraries the provider needs that only the NVIDIA driver brings and this host lacks. */
  driverMissing: string[];
}

export const PROVIDER_SHARED = 'libonnxruntime_providers_shared.so';
export const PROVIDER_CUDA = 'libonnxruntime_providers_cuda.so';
export const PROVIDER_TENSORRT = 'libonnxruntime_providers_tensorrt.so';

/** Libraries of the NVIDIA driver: never in a wheel, present only on a host with the driver. */
const DRIVER_LIBRARIES = /^lib(cuda|nvidia-[\w-]+|nvcuvid|nvidia-ml)\.so(\.\d+)*$/;
/** The loader's message when a library failed for want of the driver. */
const DRIVER_ABSENT = /lib(cuda|nvidia-ml)\.so\.1: cannot open shared object file/;
/**
 * Libraries that stand in for a standard interface (NVBLAS for BLAS, cuFFTW for FFTW): loaded
 * into the global scope they would take those symbols over for the whole process (and NVBLAS
 * complains without its config file). Nothing onnxruntime loads needs them.
 */
const INTERPOSERS = /^lib(nvblas|cufftw)\.so/;

interface PipRun {
  code: number;
  output: string;
}

function runPip(python: string, args: string[]): Promise<PipRun> {
  return new Promise((resolve) => {
    let output = '';
    let child;
    try {
      child = spawn(python, ['-m', 'pip', ...args, '--disable-pip-version-check', '--no-input'], { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ code: -1, output: (err as Error).message });
      return;
    }
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: -1, output: err.message }));
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

/** The lines of pip's output that say what went wrong (its ERROR lines, else its last line). */
function pipComplaint(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const errors = lines.filter((l) => l.startsWith('ERROR'));
  return (errors.length > 0 ? errors : lines.slice(-1)).join(' ') || 'no output';
}

interface WheelMetadata {
  version: string;
  /** Requirements of the `cuda` and `cudnn` extras, markers removed. */
  cudaRequirements: string[];
}

/** Version and CUDA extras from a dist-info METADATA file. */
export function parseMetadata(text: string): WheelMetadata {
  let version = '';
  const cudaRequirements: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line === '\r') break; // the body (description) follows the headers
    const m = /^([\w-]+):\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    const [, key, value] = m;
    if (key!.toLowerCase() === 'version') version = value!;
    if (key!.toLowerCase() !== 'requires-dist') continue;
    const [spec, marker] = value!.split(';', 2);
    if (marker && /extra\s*==\s*["'](cuda|cudnn)["']/.test(marker)) cudaRequirements.push(spec!.trim());
  }
  return { version, cudaRequirements };
}

function findDistInfo(dir: string, project: string): string | undefined {
  const want = project.toLowerCase().replace(/[-_.]+/g, '_');
  for (const entry of fs.readdirSync(dir)) {
    if (!entry.endsWith('.dist-info')) continue;
    const name = entry.slice(0, -'.dist-info'.length).replace(/-[^-]+$/, '');
    if (name.toLowerCase().replace(/[-_.]+/g, '_') === want) return path.join(dir, entry);
  }
  return undefined;
}

/** `name==version` of each wheel pip installed into `dir`. */
function installedPackages(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir)) {
    if (!entry.endsWith('.dist-info')) continue;
    const meta = path.join(dir, entry, 'METADATA');
    if (!fs.existsSync(meta)) continue;
    const text = fs.readFileSync(meta, 'utf8');
    const name = /^Name:\s*(.+?)\s*$/m.exec(text)?.[1];
    const version = /^Version:\s*(.+?)\s*$/m.exec(text)?.[1];
    if (name && version) out.push(`${name}==${version}`);
  }
  return out.sort();
}

const SHARED_OBJECT = /\.so(\.\d+)*$/;

/** Every shared library under `dir` (not Python extension modules), by path. */
function sharedLibraries(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && SHARED_OBJECT.test(e.name) && !/\.cpython-|\.abi3\.so$/.test(e.name)) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** Whether the host's dynamic loader finds `soname` on its own (its usual paths). */
function onHost(soname: string, cache: Map<string, boolean>): boolean {
  let found = cache.get(soname);
  if (found === undefined) {
    try {
      loadSharedLibrary(soname);
      found = true;
    } catch {
      found = false;
    }
    cache.set(soname, found);
  }
  return found;
}

interface Library {
  file: string;
  soname: string;
  needed: string[];
}

/**
 * The libraries to preload, dependencies first, and those left out because something they need
 * is neither installed nor on the host; throws when the provider itself lacks something.
 */
export function planPreload(
  provider: { file: string; needed: string[] },
  libraries: Library[],
  packages: string[],
  hostHas: (soname: string) => boolean,
): { order: Library[]; skipped: Array<{ library: Library; reason: string }>; driverMissing: string[] } {
  const bySoname = new Map<string, Library>();
  for (const lib of libraries) if (!bySoname.has(lib.soname)) bySoname.set(lib.soname, lib);
  const driverMissing = new Set<string>();
  const unresolved = (needed: string[]): string[] =>
    needed.filter((n) => {
      if (bySoname.has(n) || hostHas(n)) return false;
      if (DRIVER_LIBRARIES.test(n)) {
        driverMissing.add(n);
        return false;
      }
      return true;
    });
  // Left out, transitively: a library that needs a left-out one cannot load either.
  const skipped = new Map<Library, string>();
  const missingOf = (needed: string[]): string[] => unresolved(needed).concat(needed.filter((n) => bySoname.has(n) && skipped.has(bySoname.get(n)!)));
  for (const lib of bySoname.values()) {
    if (INTERPOSERS.test(lib.soname)) skipped.set(lib, 'stands in for a standard library (BLAS or FFTW) and is never loaded globally');
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const lib of bySoname.values()) {
      if (skipped.has(lib)) continue;
      const missing = missingOf(lib.needed);
      if (missing.length > 0) {
        skipped.set(lib, `needs ${missing.join(', ')}, which neither the installed packages nor this host have`);
        changed = true;
      }
    }
  }
  const providerMissing = missingOf(provider.needed);
  if (providerMissing.length > 0) {
    const why = providerMissing.map((n) => (bySoname.has(n) ? `${n} (${skipped.get(bySoname.get(n)!)})` : `${n} (needed by ${path.basename(provider.file)})`));
    throw Errors.cudaInstallMissing(why, packages);
  }
  // Depth-first over DT_NEEDED: each library after the installed ones it needs.
  const order: Library[] = [];
  const seen = new Set<Library>(); // marked before its dependencies: a cycle ends there
  const visit = (lib: Library): void => {
    if (seen.has(lib) || skipped.has(lib)) return;
    seen.add(lib);
    for (const n of lib.needed) {
      const dep = bySoname.get(n);
      if (dep !== undefined) visit(dep);
    }
    order.push(lib);
  };
  for (const lib of bySoname.values()) visit(lib);
  return { order, skipped: [...skipped].map(([library, reason]) => ({ library, reason })), driverMissing: [...driverMissing].sort() };
}

export async function installCuda(o: CudaInstallOptions): Promise<CudaInstallResult> {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) throw Errors.cudaInstallPlatform(process.platform, process.arch);
  const version = (JSON.parse(fs.readFileSync(path.join(o.onnxruntimeDir, 'package.json'), 'utf8')) as { version: string }).version;
  const binDir = ortBinaryDir(o.onnxruntimeDir);
  if (!fs.existsSync(binDir))
    throw new Error(`${binDir} does not exist: ${o.onnxruntimeDir} is not an installed onnxruntime-node for ${process.platform}/${process.arch}`);
  const pipVersion = await runPip(o.python, ['--version']);
  if (pipVersion.code !== 0) throw Errors.cudaInstallPip(o.python, pipComplaint(pipVersion.output));
  o.say(`onnxruntime-node ${version} in ${o.onnxruntimeDir}; downloading with ${pipVersion.output.trim()}`);

  // Staging inside the binary directory: the final moves are renames on one filesystem.
  const staging = fs.mkdtempSync(path.join(binDir, '.install-cuda-'));
  try {
    const wheelDir = path.join(staging, 'onnxruntime-gpu');
    o.say(`pip: onnxruntime-gpu==${version} (no dependencies)`);
    const ort = await runPip(o.python, ['install', '--no-deps', '--only-binary=:all:', '--target', wheelDir, `onnxruntime-gpu==${version}`]);
    if (ort.code !== 0) throw Errors.cudaInstallNoWheel(version, pipComplaint(ort.output));
    const distInfo = findDistInfo(wheelDir, 'onnxruntime-gpu');
    const meta = parseMetadata(distInfo ? fs.readFileSync(path.join(distInfo, 'METADATA'), 'utf8') : '');
    if (meta.version !== version) throw Errors.cudaInstallWheelVersion(meta.version || 'of no version', version);
    const capi = path.join(wheelDir, 'onnxruntime', 'capi');
    for (const file of [PROVIDER_SHARED, PROVIDER_CUDA]) {
      if (!fs.existsSync(path.join(capi, file))) throw Errors.cudaInstallWheelIncomplete(version, file);
    }

    const libDir = path.join(staging, LIBRARIES_DIR);
    fs.mkdirSync(libDir);
    if (meta.cudaRequirements.length > 0) {
      o.say(`pip: ${meta.cudaRequirements.join(' ')} (the wheel's cuda and cudnn extras, with their dependencies)`);
      const libs = await runPip(o.python, ['install', '--only-binary=:all:', '--target', libDir, ...meta.cudaRequirements]);
      if (libs.code !== 0) throw Errors.cudaInstallLibraries(version, meta.cudaRequirements, pipComplaint(libs.output));
    }
    const packages = installedPackages(libDir);
    const libraries: Library[] = sharedLibraries(libDir).map((file) => {
      const d = readDynamic(file);
      return { file, soname: d.soname ?? path.basename(file), needed: d.needed };
    });
    const hostCache = new Map<string, boolean>();
    const plan = planPreload({ file: PROVIDER_CUDA, needed: readDynamic(path.join(capi, PROVIDER_CUDA)).needed }, libraries, packages, (n) =>
      onHost(n, hostCache),
    );

    // TensorRT's libraries come from NVIDIA's own index or the system: the provider is installed
    // only where they are found, since onnxruntime would otherwise fail each TensorRT session.
    const providers = [PROVIDER_SHARED, PROVIDER_CUDA];
    const trt = path.join(capi, PROVIDER_TENSORRT);
    if (fs.existsSync(trt)) {
      const absent = readDynamic(trt).needed.filter((n) => !libraries.some((l) => l.soname === n) && !onHost(n, hostCache) && !DRIVER_LIBRARIES.test(n));
      if (absent.length === 0) providers.push(PROVIDER_TENSORRT);
      else o.say(`the TensorRT provider is not installed: this host lacks ${absent.join(', ')} (TensorRT's libraries)`);
    }

    // Everything is downloaded and checked: replace what a previous run installed.
    const finalLibDir = path.join(binDir, LIBRARIES_DIR);
    fs.rmSync(finalLibDir, { recursive: true, force: true });
    fs.renameSync(libDir, finalLibDir);
    const relative = (file: string) => path.join(LIBRARIES_DIR, path.relative(libDir, file));
    if (!providers.includes(PROVIDER_TENSORRT)) fs.rmSync(path.join(binDir, PROVIDER_TENSORRT), { force: true });
    for (const file of providers) {
      fs.copyFileSync(path.join(capi, file), path.join(binDir, `${file}.tmp`));
      fs.renameSync(path.join(binDir, `${file}.tmp`), path.join(binDir, file));
    }
    const manifest: CudaManifest = {
      onnxruntime: version,
      packages,
      providers,
      preload: plan.order.map((l) => relative(l.file)),
      skipped: plan.skipped.map((s) => ({ library: relative(s.library.file), reason: s.reason })),
      installed: new Date().toISOString(),
    };
    writeManifest(binDir, manifest);
    o.say(`installed into ${binDir}: ${providers.join(', ')}; ${packages.length} package(s) under ${LIBRARIES_DIR}/ (${packages.join(', ') || 'none'})`);
    for (const s of manifest.skipped) o.say(`not preloaded: ${s.library} ${s.reason}`);
    o.say(`${MANIFEST_FILE} lists ${manifest.preload.length} libraries to load before a CUDA session`);
    return { manifest, driverMissing: plan.driverMissing };
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

function withDriverNote(failure: string): string {
  return DRIVER_ABSENT.test(failure)
    ? `${failure}. This host has no NVIDIA driver: ONNX models with KIND_GPU run on CPU here, and on CUDA where the driver is`
    : failure;
}

/**
 * Undoes `installCuda` in `onnxruntime-node`: the providers and libraries its manifest lists, then
 * the manifest. A provider installed another way (no manifest) is left alone. Returns what was
 * removed, one line each.
 */
export function removeCuda(onnxruntimeDir: string): string[] {
  const binDir = ortBinaryDir(onnxruntimeDir);
  const manifest = readManifest(binDir);
  if (manifest === undefined) return [];
  const removed: string[] = [];
  for (const file of manifest.providers) {
    if (path.basename(file) !== file) continue; // providers sit in binDir itself
    const p = path.join(binDir, file);
    if (fs.existsSync(p)) {
      fs.rmSync(p);
      removed.push(file);
    }
  }
  const libs = path.join(binDir, LIBRARIES_DIR);
  if (fs.existsSync(libs)) {
    fs.rmSync(libs, { recursive: true, force: true });
    removed.push(`${LIBRARIES_DIR}/ (${manifest.packages.join(', ') || 'no packages'})`);
  }
  fs.rmSync(path.join(binDir, MANIFEST_FILE));
  removed.push(MANIFEST_FILE);
  return removed;
}

export interface CudaCheck {
  ok: boolean;
  /** It failed only for want of the NVIDIA driver (the installation is complete). */
  driverOnly: boolean;
  lines: string[];
}

/**
 * Loads what a CUDA session would load, in this process: the preloaded libraries, then the
 * provider libraries. On a host without the NVIDIA driver the provider fails on libcuda.so.1,
 * which is said as such (the installation itself is complete).
 */
export function checkCuda(onnxruntimeDir: string): CudaCheck {
  const binDir = ortBinaryDir(onnxruntimeDir);
  const lines: string[] = [];
  const manifest = readManifest(binDir);
  if (!fs.existsSync(path.join(binDir, PROVIDER_CUDA))) {
    return { ok: false, driverOnly: false, lines: [`no CUDA provider in ${binDir} (${PROVIDER_CUDA}); run 'tritium install-cuda'`] };
  }
  if (manifest === undefined) lines.push(`no ${MANIFEST_FILE}: the CUDA provider was installed another way; its libraries must be on the loader's path`);
  else {
    const failure = preloadCudaLibraries(binDir);
    if (failure !== undefined) return { ok: false, driverOnly: DRIVER_ABSENT.test(failure), lines: [...lines, withDriverNote(failure)] };
    lines.push(
      `loaded the ${manifest.preload.length} CUDA libraries of ${MANIFEST_FILE} (onnxruntime-gpu ${manifest.onnxruntime}: ${manifest.packages.join(', ') || 'no packages'})`,
    );
  }
  for (const file of [PROVIDER_SHARED, PROVIDER_CUDA]) {
    try {
      loadSharedLibrary(path.join(binDir, file));
    } catch (err) {
      const message = (err as Error).message;
      lines.push(withDriverNote(`${file} does not load: ${message}`));
      return { ok: false, driverOnly: DRIVER_ABSENT.test(message), lines };
    }
  }
  lines.push(`${PROVIDER_CUDA} loads: KIND_GPU ONNX instances will run on the CUDA execution provider`);
  return { ok: true, driverOnly: false, lines };
}
