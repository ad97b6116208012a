// The frameworks are optional peer dependencies: each peer range must admit every version the adapters'
// tests run on, or npm refuses to install leash beside it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function manifest(dir: string): { version: string; peerDependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as ReturnType<typeof manifest>;
}

/** Whether `range`, caret ranges joined by `||` (the only form the manifest uses), admits `version`. */
function admits(range: string, version: string): boolean {
  const [major, minor, patch] = version.split('.').map(Number);
  return range.split('||').some((part) => {
    const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(part.trim());
    if (m === null) throw new Error(`peer range "${range}" is not caret ranges joined by ||`);
    const [lowMajor, lowMinor, lowPatch] = m.slice(1).map(Number);
    if (major !== lowMajor) return false;
    if (lowMajor === 0 && minor !== lowMinor) return false; // ^0.y.z stays within 0.y
    return minor !== lowMinor
      ? (minor as number) > (lowMinor as number)
      : (patch as number) >= (lowPatch as number);
  });
}

const peers = manifest(ROOT).peerDependencies ?? {};
/** The installs the tests run each peer on: the devDependency of the same name, and aliases of it. */
const TESTED: Readonly<Record<string, readonly string[]>> = { ai: ['ai', 'ai7'] };

it.each(Object.keys(peers))('admits in the peer range of %s every version the tests run on', (peer) => {
  for (const installed of TESTED[peer] ?? [peer]) {
    const { version } = manifest(join(ROOT, 'node_modules', installed));
    expect({ installed, version, admitted: admits(peers[peer] as string, version) }).toEqual({
      installed,
      version,
      admitted: true,
    });
  }
});
