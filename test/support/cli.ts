import { main, type CliIo } from '../../src/cli/main.js';

/**
 * Runs `leash` in this process with `argv` in `cwd`, its environment empty unless `io` gives one:
 * resolves with its exit code and what it printed on stdout (stderr is dropped).
 */
export async function leashIn(
  cwd: string,
  argv: readonly string[],
  io: Partial<Omit<CliIo, 'stdout' | 'stderr' | 'cwd'>> = {},
): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await main(argv, {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: () => true },
    env: {},
    cwd,
    ...io,
  });
  return { code, out };
}
