/**
 * `tritium install-cuda` (backends/onnx/cuda/install.ts) run as a user runs it: the real CLI,
 * the real pip, real shared libraries loaded with dlopen. The wheels are made here, because
 * CUDA's run to gigabytes and CI has no GPU: each is a real wheel (dist-info, RECORD) holding
 * real ELF libraries compiled with the sonames and DT_NEEDED entries of onnxruntime-gpu's
 * provider and of the nvidia-* wheels, served to pip from a local directory (PIP_FIND_LINKS,
 * PIP_NO_INDEX) instead of PyPI. docs/gpu.md says what ran against the real wheels.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readDynamic } from '../../src/backends/onnx/cuda/elf.js';
import { preloadCudaLibraries } from '../../src/backends/onnx/cuda/preload.js';
import { ensureBuilt, PYTHON, ROOT } from '../helpers/server.js';

const V = '1.30.0';
let tmp: string;
let libs: string;
let wheelhouse: string;

/** A shared library with this soname that needs `needed` (built against the stand-ins in `libs`). */
function compile(soname: string, needed: string[] = []): string {
  const out = path.join(libs, soname);
  const src = path.join(libs, 'empty.c');
  const symbol = soname.replace(/\W/g, '_');
  fs.writeFileSync(src, `int ${symbol}(void) { return 0; }\n`);
  execFileSync('cc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-Wl,--no-as-needed', '-o', out, src, `-L${libs}`, ...needed.map((n) => `-l:${n}`)]);
  return out;
}

/** Writes a wheel `name-version-py3-none-any.whl` with `files` (path in wheel → file) and METADATA lines. */
function wheel(dir: string, name: string, version: string, files: Record<string, string>, metadata: string[] = []): void {
  const spec = {
    out: path.join(dir, `${name}-${version}-py3-none-any.whl`),
    distInfo: `${name}-${version}.dist-info`,
    metadata: ['Metadata-Version: 2.1', `Name: ${name.replace(/_/g, '-')}`, `Version: ${version}`, ...metadata].join('\n') + '\n',
    files,
  };
  // Python's zipfile writes the archive; RECORD carries each file's hash as wheels must.
  execFileSync(PYTHON, [
    '-c',
    `
import base64, hashlib, json, sys, zipfile
s = json.loads(sys.argv[1])
entries = {k: open(v, "rb").read() for k, v in s["files"].items()}
d = s["distInfo"]
entries[d + "/METADATA"] = s["metadata"].encode()
entries[d + "/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: tritium-test\\nRoot-Is-Purelib: false\\nTag: py3-none-any\\n"
record = []
for k, v in entries.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
    record.append(f"{k},sha256={h},{len(v)}")
record.append(d + "/RECORD,,")
entries[d + "/RECORD"] = ("\\n".join(record) + "\\n").encode()
with zipfile.ZipFile(s["out"], "w", zipfile.ZIP_DEFLATED) as z:
    for k, v in entries.items():
        z.writestr(k, v)
`,
    JSON.stringify(spec),
  ]);
}

/** A copy of onnxruntime-node's layout (package.json and its binary directory) at `version`. */
function fakeOrt(version: string): { dir: string; bin: string } {
  const dir = fs.mkdtempSync(path.join(tmp, 'ort-'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'onnxruntime-node', version }));
  const bin = path.join(dir, 'bin', 'napi-v6', process.platform, process.arch);
  fs.mkdirSync(bin, { recursive: true });
  return { dir, bin };
}

function installCuda(ortDir: string, extra: string[] = [], python = PYTHON) {
  const r = spawnSync(
    process.execPath,
    [path.join(ROOT, 'bin', 'tritium.js'), 'install-cuda', `--python=${python}`, `--onnxruntime-node=${ortDir}`, ...extra],
    {
      encoding: 'utf8',
      env: { ...process.env, PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheelhouse, PIP_CONFIG_FILE: os.devNull, PIP_NO_CACHE_DIR: '1' },
      timeout: 120_000,
    },
  );
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Whether this host has the NVIDIA driver's libcuda.so.1 (a GPU host running the suite). */
const hostHasDriver = (): boolean => spawnSync('sh', ['-c', 'ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 "']).status === 0;

beforeAll(() => {
  ensureBuilt();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-cuda-install-'));
  libs = path.join(tmp, 'libs');
  wheelhouse = path.join(tmp, 'wheels');
  fs.mkdirSync(libs);
  fs.mkdirSync(wheelhouse);
  // Stand-in for the driver: linked against, never put in a wheel or on the loader's path.
  compile('libcuda.so.1');
  const cudart = compile('libcudart.so.13');
  const lt = compile('libcublasLt.so.13');
  const cublas = compile('libcublas.so.13', ['libcublasLt.so.13']);
  const curand = compile('libcurand.so.10');
  const nvblas = compile('libnvblas.so.13', ['libcublas.so.13']);
  const cudnn = compile('libcudnn.so.9', ['libcudart.so.13']);
  compile('libnowhere.so.7');
  const cudnnOdd = compile('libcudnn_odd.so.9', ['libnowhere.so.7']);
  fs.rmSync(path.join(libs, 'libnowhere.so.7'), { force: true });
  const shared = compile('libonnxruntime_providers_shared.so');
  const provider = compile('libonnxruntime_providers_cuda.so', ['libcublasLt.so.13', 'libcublas.so.13', 'libcurand.so.10', 'libcudart.so.13', 'libcuda.so.1']);
  const capi = (f: string) => ({ [`onnxruntime/capi/${path.basename(f)}`]: f });
  const extras = ['Provides-Extra: cuda', 'Requires-Dist: numpy>=1.21.6', 'Requires-Dist: nvidia-cuda-runtime~=13.0; extra == "cuda"'];
  // The real wheel's extras: runtime and curand under cuda, cuDNN (which brings cuBLAS) under cudnn.
  wheel(wheelhouse, 'onnxruntime_gpu', V, { ...capi(shared), ...capi(provider) }, [
    ...extras,
    'Requires-Dist: nvidia-curand~=10.0; extra == "cuda"',
    'Provides-Extra: cudnn',
    'Requires-Dist: nvidia-cudnn-cu13~=9.0; extra == "cudnn"',
  ]);
  // A version whose extras forget curand, which its provider needs.
  wheel(wheelhouse, 'onnxruntime_gpu', '1.30.1', { ...capi(shared), ...capi(provider) }, [
    ...extras,
    'Provides-Extra: cudnn',
    'Requires-Dist: nvidia-cudnn-cu13~=9.0; extra == "cudnn"',
  ]);
  wheel(wheelhouse, 'nvidia_cuda_runtime', '13.0.96', { 'nvidia/cu13/lib/libcudart.so.13': cudart });
  wheel(wheelhouse, 'nvidia_curand', '10.4.0.35', { 'nvidia/cu13/lib/libcurand.so.10': curand });
  wheel(wheelhouse, 'nvidia_cublas', '13.1.0.3', {
    'nvidia/cu13/lib/libcublas.so.13': cublas,
    'nvidia/cu13/lib/libcublasLt.so.13': lt,
    'nvidia/cu13/lib/libnvblas.so.13': nvblas,
  });
  wheel(wheelhouse, 'nvidia_cudnn_cu13', '9.13.0.50', { 'nvidia/cudnn/lib/libcudnn.so.9': cudnn, 'nvidia/cudnn/lib/libcudnn_odd.so.9': cudnnOdd }, [
    'Requires-Dist: nvidia-cublas',
  ]);
}, 120_000);

describe('tritium install-cuda', () => {
  it("installs the provider of onnxruntime-node's version and the libraries its extras name, in load order", () => {
    const ort = fakeOrt(V);
    const r = installCuda(ort.dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    for (const f of ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so', 'tritium-cuda.json'])
      expect(fs.existsSync(path.join(ort.bin, f))).toBe(true);
    // No TensorRT provider in this wheel; no staging left behind.
    expect(fs.readdirSync(ort.bin).sort()).toEqual([
      'cuda-libs',
      'libonnxruntime_providers_cuda.so',
      'libonnxruntime_providers_shared.so',
      'tritium-cuda.json',
    ]);
    const m = JSON.parse(fs.readFileSync(path.join(ort.bin, 'tritium-cuda.json'), 'utf8'));
    expect(m.onnxruntime).toBe(V);
    expect(m.providers).toEqual(['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so']);
    // nvidia-cublas came in as a dependency of the cuDNN wheel.
    expect(m.packages).toEqual(['nvidia-cublas==13.1.0.3', 'nvidia-cuda-runtime==13.0.96', 'nvidia-cudnn-cu13==9.13.0.50', 'nvidia-curand==10.4.0.35']);
    const names = m.preload.map((p: string) => path.basename(p));
    expect(names.sort()).toEqual(['libcublas.so.13', 'libcublasLt.so.13', 'libcudart.so.13', 'libcudnn.so.9', 'libcurand.so.10']);
    const order = m.preload.map((p: string) => path.basename(p));
    expect(order.indexOf('libcublasLt.so.13')).toBeLessThan(order.indexOf('libcublas.so.13'));
    expect(order.indexOf('libcudart.so.13')).toBeLessThan(order.indexOf('libcudnn.so.9'));
    for (const p of m.preload) expect(fs.existsSync(path.join(ort.bin, p))).toBe(true);
    // A library whose own dependency exists nowhere is installed but not preloaded, with why.
    // So is NVBLAS, which would take BLAS over for the whole process.
    expect(m.skipped).toEqual([
      { library: path.join('cuda-libs', 'nvidia', 'cu13', 'lib', 'libnvblas.so.13'), reason: expect.stringContaining('never loaded globally') },
      { library: path.join('cuda-libs', 'nvidia', 'cudnn', 'lib', 'libcudnn_odd.so.9'), reason: expect.stringContaining('libnowhere.so.7') },
    ]);
    expect(r.out).toContain(`onnxruntime-node ${V} in ${ort.dir}`);
    expect(r.out).toContain('4 package(s) under cuda-libs/');
    expect(r.out).toContain('loaded the 5 CUDA libraries of tritium-cuda.json');
    if (hostHasDriver()) expect(r.out).toContain('libonnxruntime_providers_cuda.so loads');
    else {
      expect(r.out).toContain("this host lacks libcuda.so.1 (the NVIDIA driver's)");
      expect(r.out).toMatch(
        /libonnxruntime_providers_cuda\.so does not load: libcuda\.so\.1: cannot open shared object file: No such file or directory\. This host has no NVIDIA driver: ONNX models with KIND_GPU run on CPU here, and on CUDA where the driver is/,
      );
    }

    // --check loads what was installed; without a driver it fails, saying so.
    const check = installCuda(ort.dir, ['--check']);
    expect(check.out).toContain('loaded the 5 CUDA libraries');
    expect(check.code).toBe(hostHasDriver() ? 0 : 1);

    // A second run replaces the first: same files, nothing left over.
    const again = installCuda(ort.dir);
    expect(again.code).toBe(0);
    expect(fs.readdirSync(ort.bin).sort()).toEqual([
      'cuda-libs',
      'libonnxruntime_providers_cuda.so',
      'libonnxruntime_providers_shared.so',
      'tritium-cuda.json',
    ]);

    // --remove takes it all back, leaving what onnxruntime-node had; a second --remove finds nothing.
    fs.writeFileSync(path.join(ort.bin, 'libonnxruntime.so.1'), 'onnxruntime-node');
    const removed = installCuda(ort.dir, ['--remove']);
    expect(removed.code).toBe(0);
    expect(removed.out).toContain(
      'removed libonnxruntime_providers_shared.so, libonnxruntime_providers_cuda.so, cuda-libs/ (nvidia-cublas==13.1.0.3, nvidia-cuda-runtime==13.0.96, nvidia-cudnn-cu13==9.13.0.50, nvidia-curand==10.4.0.35), tritium-cuda.json',
    );
    expect(fs.readdirSync(ort.bin)).toEqual(['libonnxruntime.so.1']);
    expect(installCuda(ort.dir, ['--remove']).out).toContain(`nothing to remove: no tritium-cuda.json for ${ort.dir}`);
    expect(installCuda(ort.dir, ['--remove', '--check']).code).toBe(2);
  });

  it('refuses a provider of another version than onnxruntime-node, naming both', () => {
    const ort = fakeOrt('1.29.9');
    const r = installCuda(ort.dir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^tritium install-cuda: pip found no onnxruntime-gpu==1\.29\.9 for this platform\. onnxruntime-node is 1\.29\.9, and its CUDA provider must come from the very same version\. pip said: ERROR/,
    );
    expect(fs.readdirSync(ort.bin)).toEqual([]);
  });

  it('names a library the provider needs that no installed package has, and changes nothing', () => {
    const ort = fakeOrt('1.30.1');
    const r = installCuda(ort.dir);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'the installed CUDA libraries lack libcurand.so.10 (needed by libonnxruntime_providers_cuda.so); the packages pip installed were nvidia-cublas==13.1.0.3, nvidia-cuda-runtime==13.0.96, nvidia-cudnn-cu13==9.13.0.50',
    );
    expect(fs.readdirSync(ort.bin)).toEqual([]);
  });

  it('says when the interpreter cannot run pip', () => {
    const ort = fakeOrt(V);
    const r = installCuda(ort.dir, [], path.join(tmp, 'no-such-python'));
    expect(r.code).toBe(1);
    expect(r.err).toContain(`tritium install-cuda: cannot run pip with ${path.join(tmp, 'no-such-python')} (`);
    expect(r.err).toContain('install pip for that interpreter or name another with --python');
  });

  it('--check without an installed provider says what to run', () => {
    const ort = fakeOrt(V);
    const r = installCuda(ort.dir, ['--check']);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`no CUDA provider in ${ort.bin} (libonnxruntime_providers_cuda.so); run 'tritium install-cuda'`);
  });
});

describe('the CUDA libraries at run time', () => {
  it('reads sonames and DT_NEEDED entries from the ELF files', () => {
    expect(readDynamic(path.join(libs, 'libcublas.so.13'))).toEqual({ soname: 'libcublas.so.13', needed: expect.arrayContaining(['libcublasLt.so.13']) });
    fs.writeFileSync(path.join(tmp, 'not-elf.so'), 'text');
    expect(() => readDynamic(path.join(tmp, 'not-elf.so'))).toThrow(`${path.join(tmp, 'not-elf.so')}: not an ELF file`);
  });

  it('a library that cannot be loaded is named, with the loader’s reason (the ONNX backend then falls back to CPU)', () => {
    const ort = fakeOrt(V);
    fs.mkdirSync(path.join(ort.bin, 'cuda-libs'));
    fs.copyFileSync(path.join(libs, 'libcudnn_odd.so.9'), path.join(ort.bin, 'cuda-libs', 'libcudnn_odd.so.9'));
    const manifest = {
      onnxruntime: V,
      packages: [],
      providers: [],
      preload: ['cuda-libs/libcudnn_odd.so.9'],
      skipped: [],
      installed: new Date().toISOString(),
    };
    fs.writeFileSync(path.join(ort.bin, 'tritium-cuda.json'), JSON.stringify(manifest));
    expect(preloadCudaLibraries(ort.bin)).toMatch(
      /^loading the CUDA library cuda-libs\/libcudnn_odd\.so\.9 installed by 'tritium install-cuda' failed: libnowhere\.so\.7: cannot open shared object file/,
    );
    // A manifest that points outside the directory is refused.
    const other = fakeOrt(V);
    fs.writeFileSync(path.join(other.bin, 'tritium-cuda.json'), JSON.stringify({ ...manifest, preload: ['../../../../evil.so'] }));
    expect(preloadCudaLibraries(other.bin)).toContain("'preload' must list paths inside");
    // No manifest: nothing to load.
    expect(preloadCudaLibraries(fakeOrt(V).bin)).toBeUndefined();
  });
});
