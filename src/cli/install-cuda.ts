/**
 * @module cli/install-cuda
 * `tritium install-cuda [--python PY] [--onnxruntime-node DIR] [--check | --remove]`: the opt-in
 * step that gives onnxruntime-node its CUDA execution provider from PyPI
 * (backends/onnx/cuda/install.ts), then loads it once to say whether it can run on this host.
 * `--check` only loads; `--remove` takes back what an installation put there.
 * Exit status: 0 installed (or, with --check, loads; with --remove, removed), 1 failed, 2 a bad flag.
 */
import { Command, CommanderError } from 'commander';
import { checkCuda, installCuda, removeCuda } from '../backends/onnx/cuda/install.js';
import { ortPackageDir } from '../backends/onnx/ort-location.js';

interface InstallCudaFlags {
  python: string;
  onnxruntimeNode?: string;
  check?: boolean;
  remove?: boolean;
}

export async function installCudaCommand(argv: string[]): Promise<number> {
  const cmd = new Command('tritium install-cuda')
    .description(
      "Installs onnxruntime-node's CUDA execution provider from PyPI's onnxruntime-gpu wheel of the same version, with the CUDA libraries its cuda and cudnn extras name, and checks that it loads.",
    )
    .option('--python <interpreter>', 'the Python whose pip downloads the wheels (its index, proxy and cache settings apply)', 'python3')
    .option('--onnxruntime-node <dir>', 'the onnxruntime-node package to complete (default: the one tritium loads)')
    .option('--check', 'only check that the installed provider and its libraries load')
    .option('--remove', 'remove what an earlier install-cuda installed (providers, CUDA libraries, tritium-cuda.json)')
    .exitOverride();
  let flags: InstallCudaFlags;
  try {
    cmd.parse(argv, { from: 'user' });
    flags = cmd.opts<InstallCudaFlags>();
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  const say = (line: string) => process.stdout.write(`tritium install-cuda: ${line}\n`);
  if (flags.check && flags.remove) {
    process.stderr.write('tritium install-cuda: --check and --remove do not go together\n');
    return 2;
  }
  let dir: string;
  try {
    dir = flags.onnxruntimeNode ?? ortPackageDir();
    if (flags.remove) {
      const removed = removeCuda(dir);
      say(removed.length > 0 ? `removed ${removed.join(', ')}` : `nothing to remove: no tritium-cuda.json for ${dir}`);
      return 0;
    }
    if (!flags.check) {
      const { driverMissing } = await installCuda({ python: flags.python, onnxruntimeDir: dir, say });
      if (driverMissing.length > 0) say(`this host lacks ${driverMissing.join(', ')} (the NVIDIA driver's); the provider needs it where it runs`);
    }
  } catch (err) {
    process.stderr.write(`tritium install-cuda: ${(err as Error).message}\n`);
    return 1;
  }
  const check = checkCuda(dir);
  for (const line of check.lines) say(line);
  // A host without the driver (a build stage, a CPU machine) still has a complete installation.
  return check.ok || (check.driverOnly && !flags.check) ? 0 : 1;
}
