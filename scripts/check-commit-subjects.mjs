// Fails when a commit subject is longer than 72 characters (CONTRIBUTING.md, "Commits"). Run by
// `npm test` (scripts/test.mjs) over the history, and by the commit-msg hook (.githooks) over
// the message being committed.
//
//   node scripts/check-commit-subjects.mjs                       the commit that added this file, and every commit after it
//   node scripts/check-commit-subjects.mjs --message-file FILE   one commit message (what the commit-msg hook is given)
//
// The history before this file was added is left as it is: the check starts at the commit that
// added it (found with `git log --follow --diff-filter=A`, so a rename does not move the start).
// It checks nothing, and passes, when git is missing, when this file is not committed yet, or in
// a shallow clone that does not reach that commit.
//
// The subject is what `git log --format=%s` shows: the first paragraph of the message, its lines
// joined by spaces. An autosquash prefix (`fixup! `, `squash! `, `amend! `) does not count, since
// `git rebase --autosquash` removes the commit or the prefix.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX_SUBJECT = 72;

const self = fs.realpathSync(fileURLToPath(import.meta.url));
const root = path.resolve(path.dirname(self), '..');

/** Runs git in the repository root; `undefined` when git cannot be run at all. */
function git(args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  if (r.error) return undefined;
  return { ok: r.status === 0, out: r.stdout.trim(), err: r.stderr.trim() };
}

/** The length that counts: characters, not bytes, without an autosquash prefix. */
function counted(subject) {
  return [...subject.replace(/^(?:(?:fixup|squash|amend)! )+/, '')].length;
}

/** The subject of a commit message as the commit-msg hook receives it (before git's cleanup). */
function subjectOfMessage(text) {
  const configured = git(['config', 'core.commentChar']);
  const comment = configured?.ok && configured.out.length === 1 ? configured.out : '#';
  const lines = [];
  for (const line of text.split('\n')) {
    // `git commit -v`: everything below the scissors line is the diff, not the message.
    if (/^. -+ >8 -+$/.test(line) && line.startsWith(comment)) break;
    if (!line.startsWith(comment)) lines.push(line.trimEnd());
  }
  while (lines.length > 0 && lines[0] === '') lines.shift();
  const end = lines.indexOf('');
  return (end < 0 ? lines : lines.slice(0, end)).map((l) => l.trim()).join(' ');
}

function checkMessageFile(file) {
  const subject = subjectOfMessage(fs.readFileSync(file, 'utf8'));
  const n = counted(subject);
  if (n <= MAX_SUBJECT) return 0;
  console.error(`commit subject: ${n} characters, at most ${MAX_SUBJECT} (CONTRIBUTING.md, "Commits"):`);
  console.error(`  ${subject}`);
  console.error('Say what changed in the subject and why in the body, after a blank line.');
  console.error(`The message is kept in ${file}.`);
  return 1;
}

function checkHistory() {
  /** Nothing to check here: say why, and pass. */
  const skip = (why) => {
    console.log(`check-commit-subjects: ${why}; nothing checked`);
    return 0;
  };
  const top = git(['rev-parse', '--show-toplevel']);
  if (top === undefined) return skip('git is not available');
  if (!top.ok) return skip('not in a git repository');
  const rel = path.relative(fs.realpathSync(top.out), self).split(path.sep).join('/');

  const added = git(['log', '--follow', '--diff-filter=A', '--format=%H', 'HEAD', '--', rel]);
  const start = added?.ok ? added.out.split('\n').filter(Boolean).at(-1) : undefined;
  if (start === undefined) return skip(`${rel} is not committed yet`);

  // In a shallow clone the oldest commit present shows every file as added: whether it really
  // added this one cannot be told without the history behind it.
  const shallowFile = git(['rev-parse', '--git-path', 'shallow']);
  const shallowPath = shallowFile?.ok ? path.resolve(root, shallowFile.out) : undefined;
  const boundary = shallowPath && fs.existsSync(shallowPath) ? fs.readFileSync(shallowPath, 'utf8').split('\n') : [];
  if (boundary.includes(start)) return skip(`shallow clone: the commit that added ${rel} is not in the history here`);

  const first = git(['log', '-1', '--format=%H%x09%s', start]);
  const after = git(['log', '--format=%H%x09%s', `${start}..HEAD`]);
  if (!first?.ok || !after?.ok) {
    console.error(`check-commit-subjects: git log failed: ${first?.err || after?.err}`);
    return 1;
  }
  const commits = [first.out, ...after.out.split('\n')].filter(Boolean).map((line) => {
    const tab = line.indexOf('\t');
    return { hash: line.slice(0, tab), subject: line.slice(tab + 1) };
  });
  const long = commits.filter((c) => counted(c.subject) > MAX_SUBJECT);
  if (long.length === 0) {
    console.log(
      `check-commit-subjects: ${commits.length} commit${commits.length === 1 ? '' : 's'} from ${start.slice(0, 7)} on, every subject at most ${MAX_SUBJECT} characters`,
    );
    return 0;
  }
  console.error(
    `check-commit-subjects: ${long.length} of ${commits.length} commit${commits.length === 1 ? '' : 's'} from ${start.slice(0, 7)} on have a subject longer than ${MAX_SUBJECT} characters (CONTRIBUTING.md, "Commits"):`,
  );
  for (const c of long) console.error(`  ${c.hash.slice(0, 10)} (${counted(c.subject)}): ${c.subject}`);
  console.error('Reword them (`git rebase -i`) before they are pushed: what changed in the subject, why in the body.');
  return 1;
}

const at = process.argv.indexOf('--message-file');
if (at >= 0 && process.argv[at + 1] === undefined) {
  console.error('usage: node scripts/check-commit-subjects.mjs [--message-file FILE]');
  process.exit(2);
}
process.exit(at >= 0 ? checkMessageFile(process.argv[at + 1]) : checkHistory());
