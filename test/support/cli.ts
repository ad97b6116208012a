import { main, type CliIo } from '../../src/cli/main.js';

/**
 * Runs `leash` in this process with `argv` in `cwd`, its environment empty unless `io` gives one:
 * resolves with its exit code and what it printed on stdout and on stderr.
 */
export async function leashIn(
  cwd: string,
  argv: readonly string[],
  io: Partial<Omit<CliIo, 'stdout' | 'stderr' | 'cwd'>> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd,
    ...io,
  });
  return { code, out, err };
}

/**
 * Runs `leash mcp` with `args` in this process in `cwd`, for the refusals that come before any session:
 * its exit code and what it wrote on stderr.
 */
export async function mcpRefusedIn(cwd: string, ...args: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const code = await main(['mcp', ...args], {
    stdout: { write: () => true },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd,
  });
  return { code, err };
}
