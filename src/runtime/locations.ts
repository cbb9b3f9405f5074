// Finds Tributary's own files (the built worker, the installed @pipedream/platform) however the code was started.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PlatformLocation {
  /** The module a component's `@pipedream/platform` import loads. */
  entry: string;
  /** The package folder, for subpath imports. */
  dir: string;
  /** The package and every package it depends on, transitively: what loading it reads. */
  readPaths: string[];
}

let root: string | undefined;

/** The folder holding Tributary's package.json, found from this file so `src/` (tests) and `dist/` agree. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the package root of Tributary');
    dir = parent;
  }
  root = fs.realpathSync(dir);
  return root;
}

/** The built worker entry; forking the JS file works the same whether the server runs from dist/ or through vitest. */
export function workerEntry(): string {
  return path.join(packageRoot(), 'dist', 'runtime', 'worker', 'main.js');
}

/** Node's own lookup: the nearest `node_modules/<name>` above `fromDir`. */
function findPackageDir(fromDir: string, name: string): string | undefined {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return fs.realpathSync(candidate);
    if (path.dirname(dir) === dir) return undefined;
  }
}

function dependencyNames(dir: string): string[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  const names = new Set<string>();
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
    const deps = manifest[field];
    if (deps && typeof deps === 'object') for (const name of Object.keys(deps)) names.add(name);
  }
  return [...names];
}

/** A package folder and the folders of all it depends on; folders inside another listed folder are left out. */
export function dependencyClosure(dir: string): string[] {
  const seen = new Set<string>();
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    if (seen.has(current)) continue;
    seen.add(current);
    for (const name of dependencyNames(current)) {
      const found = findPackageDir(current, name);
      if (found !== undefined) pending.push(found);
    }
  }
  const dirs = [...seen].sort();
  return dirs.filter((d) => !dirs.some((other) => other !== d && d.startsWith(other + path.sep)));
}

let platform: PlatformLocation | undefined;

export function locatePlatform(): PlatformLocation {
  if (platform !== undefined) return platform;
  const require = createRequire(path.join(packageRoot(), 'package.json'));
  const entry = fs.realpathSync(require.resolve('@pipedream/platform'));
  const dir = findPackageDir(packageRoot(), '@pipedream/platform');
  if (dir === undefined) throw new Error('@pipedream/platform is not installed');
  platform = { entry, dir, readPaths: dependencyClosure(dir) };
  return platform;
}
