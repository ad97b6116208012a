// The frameworks are optional peer dependencies: each peer range must admit every version the adapters'
// tests run on, or npm refuses to install leash beside it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { AI7_DIR } from '../ai7/install.js';

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

/** Peers the tests also run on from a folder of their own (ai 7 asks for Node 22): peer → folder. */
const APART: Record<string, string> = { ai: AI7_DIR };

/** The version of `name` the lock in `dir` pins. */
function locked(dir: string, name: string): string {
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (version === undefined) throw new Error(`${dir}/package-lock.json pins no ${name}`);
  return version;
}

/**
 * What the tests run a peer on: its devDependency, every devDependency aliasing it (`npm:<peer>@…`), and
 * the version its folder apart pins.
 */
function installsOf(peer: string): { installed: string; version: string }[] {
  const aliases = Object.keys(dev).filter((name) => dev[name]?.startsWith(`npm:${peer}@`));
  const installs = [peer, ...aliases].map((installed) => ({
    installed,
    version: manifest(join(ROOT, 'node_modules', installed)).version,
  }));
  const apart = APART[peer];
  return apart === undefined ? installs : [...installs, { installed: apart, version: locked(apart, peer) }];
}

it.each(Object.keys(peers))('admits in the peer range of %s every version the tests run on', (peer) => {
  for (const { installed, version } of installsOf(peer)) {
    expect({ installed, version, admitted: admits(peers[peer] as string, version) }).toEqual({
      installed,
      version,
      admitted: true,
    });
  }
});

it('runs the AI SDK adapter on ai 6 and on ai 7', () => {
  expect(installsOf('ai').map(({ installed, version }) => release(version, installed)[0])).toEqual([6, 7]);
});
