// The project's test command (`npm test`): lint, format and import-cycle checks, type-check and
// build, run the vitest suites (real server, real stubs, real clients) and the pytest suite of
// the stub, then print one line `tests: N passed, N failed` that CI reads. Each static check
// counts as one test. With arguments (`npm test -- <vitest filters>`) only the build and the
// chosen vitest suites run.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'test', '.tmp');
fs.mkdirSync(out, { recursive: true });
const extra = process.argv.slice(2);
const run = (cmd, args, env = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;

let passed = 0;
let failed = 0;

// No /dev/shm file may outlive the servers and stubs the suites start.
const shmDir = '/dev/shm';
const listShm = () => (fs.existsSync(shmDir) ? fs.readdirSync(shmDir).filter((f) => f.startsWith('tritium_')) : []);
const shmBefore = new Set(listShm());

const python = process.env.TRITIUM_PYTHON ?? path.join(root, '.venv', 'bin', 'python');
const ruff = path.join(root, '.venv', 'bin', 'ruff');

/** Runs one static check; it counts as one passed or failed test. */
function check(name, cmd, args) {
  if (run(cmd, args) === 0) {
    passed++;
    console.log(`test: ${name}: ok`);
  } else {
    failed++;
    console.error(`test: ${name} failed`);
  }
}

if (extra.length === 0) {
  // Biome: lint and format check of the TypeScript and JavaScript (biome.jsonc).
  check('biome (lint + format)', 'npx', ['biome', 'ci', '.']);
  // ruff: lint and format check of stub/ and test/python (ruff.toml).
  check('ruff check', ruff, ['check', '.']);
  check('ruff format', ruff, ['format', '--check', '.']);
  check('import cycles', process.execPath, [path.join(root, 'scripts', 'check-cycles.mjs')]);
  // hadolint, yamllint and kubernetes-validate over Dockerfile and deploy/.
  check('deploy lint', process.execPath, [path.join(root, 'scripts', 'lint-deploy.mjs')]);
  // Commit subjects of at most 72 characters, from the commit that added the check on.
  check('commit subjects', process.execPath, [path.join(root, 'scripts', 'check-commit-subjects.mjs')]);
}

if (run('npx', ['tsc', '-p', 'tsconfig.json']) !== 0) {
  console.error('test: TypeScript build failed');
  failed++;
}

if (extra.length === 0) {
  // The tests and benchmarks are type-checked too (tsconfig.test.json), not only transpiled.
  check('type check of test/ and bench/', 'npx', ['tsc', '-p', 'tsconfig.test.json']);
}

const vitestJson = path.join(out, 'vitest.json');
fs.rmSync(vitestJson, { force: true });
const vitestStatus = run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${vitestJson}`, ...extra]);
if (fs.existsSync(vitestJson)) {
  const r = JSON.parse(fs.readFileSync(vitestJson, 'utf8'));
  passed += r.numPassedTests ?? 0;
  // A suite that failed to load has no failed assertions of its own; count it once.
  const brokenSuites = (r.testResults ?? []).filter((t) => t.status === 'failed' && !(t.assertionResults ?? []).some((a) => a.status === 'failed')).length;
  const counted = (r.numFailedTests ?? 0) + brokenSuites;
  failed += counted;
  // vitest failing without a failed test to show for it (its global setup refused to start,
  // no test file ran): a failure, never a green run of fewer tests.
  if (vitestStatus !== 0 && counted === 0) {
    console.error(`test: vitest exited with code ${vitestStatus} without a failed test (setup error: see above)`);
    failed++;
  }
} else {
  console.error('test: vitest produced no report');
  failed++;
}

if (extra.length === 0) {
  const junit = path.join(out, 'pytest.xml');
  fs.rmSync(junit, { force: true });
  run(python, ['-m', 'pytest', '-q', 'test/python', `--junitxml=${junit}`]);
  if (fs.existsSync(junit)) {
    const xml = fs.readFileSync(junit, 'utf8');
    const m = /<testsuite [^>]*>/.exec(xml)?.[0] ?? '';
    const attr = (k) => Number(new RegExp(`${k}="(\\d+)"`).exec(m)?.[1] ?? 0);
    const total = attr('tests');
    const bad = attr('failures') + attr('errors');
    passed += total - bad - attr('skipped');
    failed += bad;
  } else {
    console.error('test: pytest produced no report');
    failed++;
  }
}

const leftovers = listShm().filter((f) => !shmBefore.has(f));
if (leftovers.length) {
  console.error(`test: shared memory left in ${shmDir} after the suites: ${leftovers.join(', ')}`);
  failed++;
} else {
  passed++;
  console.log(`test: no shared memory left in ${shmDir}`);
}

console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
