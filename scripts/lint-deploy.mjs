#!/usr/bin/env node
// Lint of what deploys tritium (part of `npm test`): the Dockerfile with hadolint, every YAML
// file under deploy/ with yamllint, the Kubernetes manifests against the Kubernetes API schemas
// with kubernetes-validate (--strict: unknown fields are errors), and the Kustomize base's list
// of resources. The tools come from PyPI into .venv (requirements-dev.txt). KServe's custom
// resources have no schema there; test/e2e/deploy.test.ts runs their container arguments instead.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (tool) => path.join(root, '.venv', 'bin', tool);
let failed = 0;
const run = (name, cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`lint-deploy: ${name} failed${r.error ? ` (${r.error.message})` : ''}`);
  }
};

const yamlFiles = (dir) =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();

run('hadolint', bin('hadolint'), ['Dockerfile']);
run('yamllint', bin('yamllint'), ['--strict', '-c', '.yamllint.yaml', 'deploy']);
const manifests = yamlFiles('deploy/kubernetes').filter((f) => path.basename(f) !== 'kustomization.yaml');
run('kubernetes-validate', bin('kubernetes-validate'), ['--strict', '--quiet', ...manifests]);

// Every resource the Kustomize base lists exists, and every manifest beside it is listed or says
// why not (the adapter rules belong to prometheus-adapter's deployment).
const kustomization = fs.readFileSync(path.join(root, 'deploy/kubernetes/kustomization.yaml'), 'utf8');
const listed = [...kustomization.matchAll(/^\s+-\s+(\S+\.ya?ml)\s*$/gm)].map((m) => m[1]);
for (const f of listed) {
  if (!fs.existsSync(path.join(root, 'deploy/kubernetes', f))) {
    failed++;
    console.error(`lint-deploy: deploy/kubernetes/kustomization.yaml lists ${f}, which does not exist`);
  }
}
for (const f of manifests.map((m) => path.basename(m))) {
  if (!listed.includes(f) && f !== 'prometheus-adapter-rules.yaml') {
    failed++;
    console.error(`lint-deploy: deploy/kubernetes/${f} is not in kustomization.yaml`);
  }
}
process.exit(failed === 0 ? 0 : 1);
