/**
 * scripts/check-commit-subjects.mjs (run by npm test) and the commit-msg hook in .githooks, in
 * throw-away git repositories: subjects of at most 72 characters from the commit that added the
 * check on, older history left alone, and a pass that says why when there is nothing to check.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = 'scripts/check-commit-subjects.mjs';
const HOOK = '.githooks/commit-msg';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** git and node see only the repository at hand: no user or system config, no GIT_DIR of a caller. */
const env: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_'))),
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
};

function sh(cwd: string, cmd: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, env: { ...env, ...extraEnv }, encoding: 'utf8' });
}

function git(cwd: string, ...args: string[]): string {
  const r = sh(cwd, 'git', args);
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-subjects-'));
  dirs.push(d);
  return d;
}

/** A fresh repository with one commit whose subject is long: history from before the check. */
function repo(): string {
  const d = tmp();
  git(d, 'init', '-q', '-b', 'main');
  git(d, 'config', 'user.name', 'Test');
  git(d, 'config', 'user.email', 'test@example.com');
  commit(d, 'An old commit from before the check, whose subject goes on well past the limit');
  return d;
}

let n = 0;
/** Commits a change to a file with the given message (subject, or subject and body). */
function commit(d: string, message: string): string {
  fs.writeFileSync(path.join(d, 'file.txt'), `${n++}\n`);
  git(d, 'add', 'file.txt');
  git(d, 'commit', '-q', '-m', message);
  return git(d, 'rev-parse', 'HEAD');
}

/** Copies the checker into the repository and commits it. */
function addChecker(d: string, subject = 'Check commit subjects'): string {
  fs.mkdirSync(path.join(d, 'scripts'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, SCRIPT), path.join(d, SCRIPT));
  git(d, 'add', SCRIPT);
  git(d, 'commit', '-q', '-m', subject);
  return git(d, 'rev-parse', 'HEAD');
}

function check(d: string, script = SCRIPT, extraEnv: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return sh(d, process.execPath, [script], extraEnv);
}

const subject = (length: number) => 'x'.repeat(length);

describe('check-commit-subjects.mjs over the history', () => {
  it('checks nothing and passes while the checker is not committed', () => {
    const d = repo();
    fs.mkdirSync(path.join(d, 'scripts'));
    fs.copyFileSync(path.join(ROOT, SCRIPT), path.join(d, SCRIPT));
    const r = check(d);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('scripts/check-commit-subjects.mjs is not committed yet; nothing checked');
  });

  it('passes with subjects of at most 72 characters after the commit that added it, whatever came before', () => {
    const d = repo();
    const start = addChecker(d);
    commit(d, subject(72));
    commit(d, `Short subject\n\n${subject(200)}`);
    const r = check(d);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`3 commits from ${start.slice(0, 7)} on, every subject at most 72 characters`);
  });

  it('fails on a subject of 73 characters and names the commit', () => {
    const d = repo();
    const start = addChecker(d);
    commit(d, 'Short subject');
    const long = commit(d, subject(73));
    commit(d, 'Another short subject');
    const r = check(d);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`1 of 4 commits from ${start.slice(0, 7)} on have a subject longer than 72 characters`);
    expect(r.stderr).toContain(`${long.slice(0, 10)} (73): ${subject(73)}`);
    expect(r.stderr).not.toContain('Short subject');
  });

  it('checks the subject of the commit that added it too', () => {
    const d = repo();
    const start = addChecker(d, `Add the check ${subject(70)}`);
    const r = check(d);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${start.slice(0, 10)} (84)`);
  });

  it('counts the first paragraph as the subject, as git log does, without an autosquash prefix', () => {
    const d = repo();
    addChecker(d);
    commit(d, `fixup! ${subject(72)}`);
    expect(check(d).status).toBe(0);
    commit(d, `${subject(40)}\n${subject(40)}\n\nbody`);
    const r = check(d);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`(81): ${subject(40)} ${subject(40)}`);
  });

  it('keeps its starting point when the checker is renamed', () => {
    const d = repo();
    addChecker(d);
    commit(d, subject(80));
    git(d, 'mv', SCRIPT, 'scripts/subjects.mjs');
    git(d, 'commit', '-q', '-m', 'Rename the check');
    const r = check(d, 'scripts/subjects.mjs');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('(80)');
  });

  it('says so and passes in a shallow clone that lacks the commit that added it', () => {
    const d = repo();
    commit(d, subject(90));
    addChecker(d);
    commit(d, subject(80));
    commit(d, 'Short subject');
    const clone = tmp();
    git(clone, 'clone', '-q', '--depth', '1', `file://${d}`, 'c');
    const r = check(path.join(clone, 'c'));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('shallow clone: the commit that added scripts/check-commit-subjects.mjs is not in the history here; nothing checked');
    // Deep enough to reach that commit and its parent, the check runs (from that commit on).
    git(clone, 'clone', '-q', '--depth', '4', `file://${d}`, 'deep');
    expect(fs.existsSync(path.join(clone, 'deep', '.git', 'shallow'))).toBe(true);
    const deep = check(path.join(clone, 'deep'));
    expect(deep.status).toBe(1);
    expect(deep.stderr).toContain('1 of 3 commits from');
    expect(deep.stderr).toContain('(80)');
  });

  it('says so and passes without git', () => {
    const d = repo();
    addChecker(d);
    commit(d, subject(80));
    const r = check(d, SCRIPT, { PATH: tmp() });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('git is not available; nothing checked');
  });
});

describe('the commit-msg hook', () => {
  function hooked(): string {
    const d = repo();
    addChecker(d);
    fs.mkdirSync(path.join(d, '.githooks'));
    fs.copyFileSync(path.join(ROOT, HOOK), path.join(d, HOOK));
    fs.chmodSync(path.join(d, HOOK), 0o755);
    git(d, 'config', 'core.hooksPath', '.githooks');
    return d;
  }

  function tryCommit(d: string, message: string): SpawnSyncReturns<string> {
    fs.writeFileSync(path.join(d, 'file.txt'), `${n++}\n`);
    git(d, 'add', 'file.txt');
    return sh(d, 'git', ['commit', '-q', '-m', message]);
  }

  it('refuses a subject over 72 characters and takes one of 72', () => {
    const d = hooked();
    const before = git(d, 'rev-parse', 'HEAD');
    const refused = tryCommit(d, `${subject(73)}\n\nThe body may be as long as it likes ${subject(100)}`);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('commit subject: 73 characters, at most 72');
    expect(git(d, 'rev-parse', 'HEAD')).toBe(before);

    const taken = tryCommit(d, `${subject(72)}\n\nThe body may be as long as it likes ${subject(100)}`);
    expect(taken.stderr).toBe('');
    expect(taken.status).toBe(0);
    expect(git(d, 'log', '-1', '--format=%s')).toBe(subject(72));
  });

  it('reads the subject as git log will: the first paragraph, comment lines left out', () => {
    const d = hooked();
    const refused = tryCommit(d, `${subject(40)}\n${subject(40)}`);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('81 characters');

    const file = path.join(d, 'message.txt');
    fs.writeFileSync(file, `\n${subject(60)}\n\nbody\n# ${subject(100)}\n`);
    fs.writeFileSync(path.join(d, 'file.txt'), `${n++}\n`);
    git(d, 'add', 'file.txt');
    // --cleanup=strip drops the comment line from the commit, as an editor session does.
    const taken = sh(d, 'git', ['commit', '-q', '--cleanup=strip', '-F', file]);
    expect(taken.status).toBe(0);
    expect(check(d).status).toBe(0);
  });
});
