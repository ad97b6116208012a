// The frameworks are optional peer dependencies: each peer range must admit every version the adapters'
// tests run on, or npm refuses to install leash beside it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Manifest {
  readonly version: string;
  readonly peerDependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** The three numbers of a release version; a prerelease or another form is refused. */
function release(version: string, what: string): [number, number, number] {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (m === null) throw new Error(`${what} "${version}" is not a release version`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Whether `range`, caret ranges joined by `||` (the only form the manifest uses), admits `version`. */
function admits(range: string, version: string): boolean {
  const [major, minor, patch] = release(version, 'installed version');
  return range.split('||').some((part) => {
    const caret = part.trim();
    if (!caret.startsWith('^')) throw new Error(`peer range "${range}" is not caret ranges joined by ||`);
    const [low, lowMinor, lowPatch] = release(caret.slice(1), 'caret range');
    if (major !== low) return false;
    // ^0.y.z stays within 0.y, and ^0.0.z is z alone.
    if (low === 0 && lowMinor === 0) return minor === 0 && patch === lowPatch;
    if (low === 0 && minor !== lowMinor) return false;
    return minor !== lowMinor ? minor > lowMinor : patch >= lowPatch;
  });
}

const { peerDependencies: peers = {}, devDependencies: dev = {} } = manifest(ROOT);

/** What the tests run a peer on: its devDependency, and every devDependency aliasing it (`npm:<peer>@…`). */
function installsOf(peer: string): string[] {
  const aliases = Object.keys(dev).filter((name) => dev[name]?.startsWith(`npm:${peer}@`));
  return [peer, ...aliases];
}

it.each(Object.keys(peers))('admits in the peer range of %s every version the tests run on', (peer) => {
  for (const installed of installsOf(peer)) {
    const { version } = manifest(join(ROOT, 'node_modules', installed));
    expect({ installed, version, admitted: admits(peers[peer] as string, version) }).toEqual({
      installed,
      version,
      admitted: true,
    });
  }
});

it('runs the AI SDK adapter on ai 6 and on ai 7', () => {
  expect(
    installsOf('ai').map((name) => release(manifest(join(ROOT, 'node_modules', name)).version, name)[0]),
  ).toEqual([6, 7]);
});
