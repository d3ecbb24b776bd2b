/**
 * @module cli/main
 * `tritium` entry point: parse tritonserver-style flags, start the server, and handle
 * SIGINT/SIGTERM (first: graceful shutdown; second: exit at once, removing shared memory).
 */
import { CommanderError } from 'commander';
import { createLogger } from '../core/logger.js';
import { logSettingsOf, releaseAtExit, startServer, StartupError, type RunningServer } from '../start-server.js';
import { OptionsError } from '../server-options.js';
import { installCudaCommand } from './install-cuda.js';
import { parseOptions } from './options.js';

/** A usage error: the options cannot be served. Nothing has started; exit status 2, as for a bad flag. */
function exitWithUsageError(err: Error): never {
  process.stderr.write(`tritium: ${err.message}\nRun 'tritium --help' for the list of flags.\n`);
  process.exit(2);
}

export async function main(argv: string[]): Promise<void> {
  // Subcommands come first; every other argument list is tritonserver's flags.
  if (argv[0] === 'install-cuda') process.exit(await installCudaCommand(argv.slice(1)));
  let options;
  try {
    options = parseOptions(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version print and exit 0; everything else is a usage error (commander has
      // printed it, with the nearest known flag for an unknown one).
      process.exit(err.exitCode === 0 ? 0 : 2);
    }
    exitWithUsageError(err as Error);
  }
  let log;
  try {
    log = createLogger(logSettingsOf(options));
  } catch (err) {
    process.stderr.write(`tritium: cannot open --log-file=${options.logFile}: ${(err as Error).message}\n`);
    process.exit(2);
  }
  for (const w of options.warnings) log.warn(w);
  let server: RunningServer | undefined;
  // Shared memory must not outlive us on any exit path Node sees: normal exit, signals, an
  // uncaught error, a signal during start-up. (SIGKILL leaves files; the next start removes them.)
  process.on('exit', () => {
    server?.kill();
    releaseAtExit();
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (server === undefined) {
      // Models are still loading: there is nothing to drain, and finalize of a half-started
      // instance is not owed. Stop the stubs being started and leave.
      log.warn(`received ${sig} during start-up; stopping`);
      process.exit(1);
    }
    if (signals > 1) {
      log.warn(`received ${sig} again; exiting now`);
      server.kill();
      process.exit(1);
    }
    log.info(`received ${sig}; shutting down (up to ${options.exitTimeoutSecs} s)`);
    const running = server;
    running.shutdown().then(
      (code) => process.exit(code),
      (err) => {
        log.error(`shutdown failed: ${(err as Error).message}`);
        running.kill();
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    server = await startServer(options, log);
  } catch (err) {
    // A --backend-config key its backend refuses: each backend checks its own keys when the
    // server starts, before anything is opened (server-options.ts).
    if (err instanceof OptionsError) exitWithUsageError(err);
    log.error(err instanceof StartupError ? err.message : `failed to start: ${(err as Error).stack ?? err}`);
    process.exit(1);
  }
}
