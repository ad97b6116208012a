// A consumer project of the package as a user installs it: the tarball `npm pack` makes of the built
// dist/, unpacked into a new project whose node_modules holds only the package's declared dependencies
// (and @types/node 20), each linked from this checkout's install, plus whatever frameworks a test links
// in. Packing needs the built dist/ (`npm run build` first, as .ci/run does), so the tests that use it
// run on CI, or with LEASH_PACK_TEST=1, only.
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onCI } from './ci.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Whether the tests that pack the package run: on CI, or with LEASH_PACK_TEST=1. */
export const PACK_TESTS = onCI() || process.env['LEASH_PACK_TEST'] === '1';

/** A dependency to link: a name in this checkout's node_modules, or [name, installed]: a name there or a folder elsewhere, linked under `name`. */
export type Dependency = string | readonly [name: string, installed: string];

/**
 * Runs `command` in `cwd` (with `env`, else this process's environment), waiting for it: at most
 * `timeout` ms, 110 s unless told.
 */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  { env, timeout = 110_000 }: { env?: NodeJS.ProcessEnv; timeout?: number } = {},
): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', timeout, ...(env ? { env } : {}) });
}

/** Runs the TypeScript compiler of this checkout on `tsconfig` in `project`, for at most `timeout` ms. */
export function tsc(
  project: string,
  tsconfig = 'tsconfig.json',
  timeout = 110_000,
): SpawnSyncReturns<string> {
  return run(process.execPath, [TSC, '-p', tsconfig], project, { timeout });
}

/** Packs the package into `into` (`npm pack` of the built dist/); returns the tarball's path. */
export function packTarball(into: string): string {
  execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', into], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  const packed = readdirSync(into).find((f) => f.endsWith('.tgz'));
  if (packed === undefined) throw new Error('npm pack wrote no tarball');
  return join(into, packed);
}

/** Links each dependency from this checkout's install, and nothing else. */
export function installDependencies(into: string, dependencies: readonly Dependency[]): void {
  for (const entry of dependencies) {
    const [name, installed] = typeof entry === 'string' ? [entry, entry] : entry;
    mkdirSync(dirname(join(into, 'node_modules', name)), { recursive: true });
    symlinkSync(resolve(ROOT, 'node_modules', installed), join(into, 'node_modules', name), 'dir');
  }
}

/**
 * Links `names` and every package they need, as npm installs them: their dependencies, optional
 * dependencies and peer dependencies not marked optional, and theirs, side by side in `into`'s
 * node_modules (a package this checkout's install nests inside another comes with it). A package already
 * there is kept. Compiled with `preserveSymlinks`, a project then finds only what such an install has.
 */
export function installWithDependencies(into: string, names: readonly string[]): void {
  const seen = new Set<string>();
  // Each with whether it is optional: npm skips an optional dependency it cannot install (another platform's).
  const queue = names.map((name): [string, boolean] => [name, false]);
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const [name, optional] = next;
    const installed = join(ROOT, 'node_modules', name);
    if (seen.has(name) || (optional && !existsSync(installed))) continue;
    if (!existsSync(installed)) throw new Error(`${name} is not installed in this checkout`);
    seen.add(name);
    if (!isThere(join(into, 'node_modules', name))) installDependencies(into, [name]);
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Manifest;
    const optionalPeers = manifest.peerDependenciesMeta ?? {};
    const peers = Object.keys(manifest.peerDependencies ?? {});
    queue.push(
      ...Object.keys(manifest.dependencies ?? {}).map((d): [string, boolean] => [d, false]),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((d): [string, boolean] => [d, true]),
      ...peers.filter((p) => optionalPeers[p]?.optional !== true).map((p): [string, boolean] => [p, false]),
    );
  }
}

/** The parts of a package.json that say what a package needs. */
interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

function isThere(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The compiler options of a consumer project: strict, and leash's own types checked (no skipLibCheck). */
export const CONSUMER_COMPILER_OPTIONS = {
  strict: true,
  skipLibCheck: false,
  module: 'nodenext',
  moduleResolution: 'nodenext',
  target: 'es2022',
  types: ['node'],
  outDir: 'out',
} as const;

/**
 * A new consumer project in `into`: the package unpacked from `tarball` into its node_modules, with its
 * declared dependencies and @types/node, and a tsconfig.json of {@link CONSUMER_COMPILER_OPTIONS}
 * compiling `files` to out/. Returns the names of the dependencies it linked.
 */
export function consumerProject(into: string, tarball: string, files: readonly string[]): string[] {
  const leash = join(into, 'node_modules/leash');
  mkdirSync(leash, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', leash, '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(leash, 'package.json'), 'utf8')) as Manifest;
  const linked = [...Object.keys(manifest.dependencies ?? {}), '@types/node'];
  installDependencies(into, linked);
  writeFileSync(join(into, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  writeFileSync(
    join(into, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: CONSUMER_COMPILER_OPTIONS, files }),
  );
  return linked;
}
