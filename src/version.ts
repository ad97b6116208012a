import { readFileSync } from 'node:fs';

let version: string | undefined;

/** leash's version, from its package.json (read once); `0.0.0` when it cannot be read. */
export function packageVersion(): string {
  if (version !== undefined) return version;
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    version = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    version = '0.0.0';
  }
  return version;
}
