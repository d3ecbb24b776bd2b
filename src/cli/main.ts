/**
 * @module cli/main
 * `tritium` entry point: parse tritonserver-style flags, start the server, and handle
 * SIGINT/SIGTERM (first: graceful shutdown; second: exit at once, removing shared memory).
 */
import { CommanderError } from 'commander';
import { createLogger } from '../core/logger.js';
import { startServer, StartupError } from '../server.js';
import { OptionsError, parseOptions } from './options.js';

export async function main(argv: string[]): Promise<void> {
  let options;
  try {
    options = parseOptions(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version print and exit 0; everything else is a usage error.
      process.exit(err.exitCode);
    }
    process.stderr.write(`tritium: ${(err as Error).message}\nRun 'tritium --help' for the list of flags.\n`);
    process.exit(2);
  }
  const log = createLogger({ info: options.logInfo, warning: options.logWarning, error: options.logError, verbose: options.logVerbose });
  let server;
  try {
    server = await startServer(options, log);
  } catch (err) {
    log.error(err instanceof StartupError ? err.message : `failed to start: ${(err as Error).stack ?? err}`);
    process.exit(1);
  }
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      log.warn(`received ${sig} again; exiting now`);
      server.kill();
      process.exit(1);
    }
    log.info(`received ${sig}; shutting down (up to ${options.exitTimeoutSecs} s)`);
    server.shutdown().then(
      (code) => process.exit(code),
      (err) => {
        log.error(`shutdown failed: ${(err as Error).message}`);
        server.kill();
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Shared memory must not outlive us even on an unexpected crash.
  process.on('exit', () => server.kill());
}

export { OptionsError };
