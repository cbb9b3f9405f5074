// The npm package cache: each package components import, installed once per exact version under <dataDir>/packages.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Npm } from './npm.js';
import type { RuntimeLogger } from './options.js';
import type { InstallProgress } from './types.js';
import { quote, shorten } from './worker/quote.js';

/** A bare import split up: `@scope/pkg@1.2.3/sub/path` is `{ name: "@scope/pkg", range: "1.2.3", subpath: "/sub/path" }`. */
export interface PackageImport {
  name: string;
  range?: string;
  subpath: string;
}

/** Hears the steps of one `ensure`: the version is the range asked for while `resolving`, then the exact one. */
export type PackageStepListener = (step: InstallProgress['step'], version: string) => void;

export interface InstalledPackage {
  name: string;
  version: string;
  /** The install folder (its `node_modules` holds the package and its dependencies). */
  dir: string;
}

const NAME = /^(?:@[a-z0-9][\w.~-]*\/)?[a-zA-Z0-9][\w.~-]*$/;
const RANGE = /^[\w.^~<>=*|+-]+$/;
const EXACT = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
/** Written inside the install folder last, so a folder without it is never used. */
const MARKER = '.tributary-installed';
/**
 * The checks an install folder has passed, written in its marker: 1, no link leaving the folder; 2, no archive
 * unpacked from the server's disk; 3, no repository cloned from it either; 4, no dependency from elsewhere than the
 * registry. A folder whose marker names fewer (installed by an earlier version of Tributary) is checked
 * when next used, and removed if it fails.
 */
const CHECKS = 4;
/** How long "latest" (or a range) is trusted before npm is asked again. */
const RESOLUTION_TTL_MS = 10 * 60_000;

/** Undefined when the specifier is not an npm package name (with an optional version and subpath). */
export function parsePackageImport(specifier: string): PackageImport | undefined {
  const scoped = specifier.startsWith('@');
  const parts = specifier.split('/');
  const head = scoped ? parts.slice(0, 2).join('/') : parts[0]!;
  const subpath = parts.slice(scoped ? 2 : 1).join('/');
  const at = head.indexOf('@', scoped ? 1 : 0);
  const name = at === -1 ? head : head.slice(0, at);
  const range = at === -1 ? undefined : head.slice(at + 1);
  if (!NAME.test(name) || name.length > 214) return undefined;
  if (range !== undefined && !RANGE.test(range)) return undefined;
  if (parts.slice(scoped ? 2 : 1).some((segment) => segment === '' || segment === '.' || segment === '..')) return undefined;
  return { name, range, subpath: subpath === '' ? '' : `/${subpath}` };
}

/** Orders `x.y.z[-pre]` versions; enough to pick the newest installed copy when npm is unreachable. */
function compareVersions(a: string, b: string): number {
  const [coreA = '', preA] = a.split('-', 2);
  const [coreB = '', preB] = b.split('-', 2);
  const numsA = coreA.split('.').map(Number);
  const numsB = coreB.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const diff = (numsA[i] ?? 0) - (numsB[i] ?? 0);
    if (diff !== 0) return diff;
  }
  if (preA === preB) return 0;
  if (preA === undefined) return 1;
  if (preB === undefined) return -1;
  return preA < preB ? -1 : 1;
}

/**
 * The first symbolic link under `root` whose target lies outside it (its path in `root`; not the target, a server path). npm links a dependency
 * declared as `file:<folder>` (a published package may declare one) instead of copying it, and workers may read the
 * install folder: Node's permission model follows a link out of it, so such a link would open its target (the data
 * folder, the database, the secret key) to every component that imports the package.
 */
async function linkOutside(root: string): Promise<string | undefined> {
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(file);
      else if (entry.isSymbolicLink()) {
        // Every link is judged by its own text, so a chain of links is caught at the one that leaves.
        const target = path.resolve(dir, await fs.readlink(file));
        const inside = path.relative(root, target);
        if (inside.split(path.sep)[0] === '..' || path.isAbsolute(inside)) return path.relative(root, file);
      }
    }
  }
  return undefined;
}

type InstallRecord = Record<string, { resolved?: unknown; link?: unknown; dependencies?: unknown; optionalDependencies?: unknown; peerDependencies?: unknown }>;

/** npm's record of the install (node_modules/.package-lock.json): where each package came from, what each declares. */
async function installRecord(root: string): Promise<InstallRecord | undefined> {
  try {
    const record = JSON.parse(await fs.readFile(path.join(root, 'node_modules', '.package-lock.json'), 'utf8')) as { packages?: InstallRecord };
    return record.packages ?? {};
  } catch {
    return undefined;
  }
}

/**
 * The first package under `root` npm took from the server's own disk (its path in `root`): a `file:<archive>`
 * dependency (a published package may declare one) is unpacked into the install folder, where components read it,
 * and a `git+file:<repository>` one is cloned there.
 */
function copiedFromDisk(record: InstallRecord): string | undefined {
  for (const [location, entry] of Object.entries(record)) {
    // `file:` and `git+file:` (a repository on the server, cloned) alike.
    if (entry.link === true || (typeof entry.resolved === 'string' && /^(git\+)?file:/i.test(entry.resolved))) return location;
  }
  return undefined;
}

/**
 * A dependency some package under `root` declares from elsewhere than the registry (`its <location> … "<spec>"`): a
 * tarball URL or a git repository is fetched by npm from the server's own network, where components may not reach
 * (an internal host, a cloud metadata service), and what it answers would be kept for components to read. A registry
 * dependency is a version range or tag (`npm:<name>@<range>` for an alias): no `:` and no `/`.
 */
function fetchedFromElsewhere(record: InstallRecord): string | undefined {
  for (const [location, entry] of Object.entries(record)) {
    for (const declared of [entry.dependencies, entry.optionalDependencies, entry.peerDependencies]) {
      if (typeof declared !== 'object' || declared === null) continue;
      for (const [name, spec] of Object.entries(declared)) {
        const range = typeof spec === 'string' && spec.startsWith('npm:') ? spec.slice(spec.lastIndexOf('@') + 1) : String(spec);
        if (/[:/]/.test(range)) return `${location} depends on ${shorten(name)} from ${quote(range)}`;
      }
    }
  }
  return undefined;
}

/** Why components may not read the install folder `root`, or undefined. */
async function installProblem(root: string): Promise<string | undefined> {
  const link = await linkOutside(root);
  if (link !== undefined) return `its ${link} links outside its install folder, where components may not read (a file: dependency?)`;
  const record = await installRecord(root);
  if (record === undefined) return 'npm left no record of what it installed';
  const copied = copiedFromDisk(record);
  if (copied !== undefined) return `its ${copied} is not from the registry but from a file on the server (a file: or git+file: dependency)`;
  const fetched = fetchedFromElsewhere(record);
  if (fetched !== undefined) return `its ${fetched}, not from the registry (only registry packages are installed)`;
  return undefined;
}

export class PackageCache {
  /** One install at a time per name and version: concurrent saves share it. */
  private readonly installs = new Map<string, Promise<InstalledPackage>>();
  private readonly resolutions = new Map<string, { version: string; at: number }>();

  constructor(
    readonly root: string,
    private readonly npm: Npm,
    private readonly logger: RuntimeLogger,
  ) {}

  folder(name: string, version: string): string {
    return path.join(this.root, `${name}@${version}`);
  }

  /** Whether the folder holds a finished install that passed today's checks (an older one is checked now: see CHECKS). */
  async isInstalled(dir: string): Promise<boolean> {
    const marker = path.join(dir, MARKER);
    let written: { checks?: unknown };
    try {
      written = JSON.parse(await fs.readFile(marker, 'utf8')) as { checks?: unknown };
    } catch {
      return false;
    }
    if (written.checks === CHECKS) return true;
    const problem = await installProblem(dir);
    if (problem !== undefined) {
      this.logger.warn({ dir, problem }, 'removing a cached npm package that fails the checks of this version');
      // Renamed away first, so no worker is given the folder again while it is being removed.
      const doomed = path.join(this.root, '.tmp', `removed-${randomBytes(6).toString('hex')}`);
      await fs.mkdir(path.dirname(doomed), { recursive: true });
      await fs.rename(dir, doomed).then(
        () => fs.rm(doomed, { recursive: true, force: true }),
        () => undefined,
      );
      return false;
    }
    const temp = `${marker}.${randomBytes(6).toString('hex')}`;
    await fs.writeFile(temp, JSON.stringify({ ...written, checks: CHECKS }));
    await fs.rename(temp, marker);
    return true;
  }

  /**
   * Installs `name` at the exact version `range` resolves to, unless that version is already in the cache. `onStep`
   * hears each step as it happens: `resolving` only when npm is asked, then `cached`, or `installing` and
   * `installed` (also when the install is another save's, joined here).
   */
  async ensure(name: string, range: string | undefined, onStep?: PackageStepListener): Promise<InstalledPackage> {
    const version = await this.resolveVersion(name, range ?? 'latest', onStep);
    const key = `${name}@${version}`;
    let pending = this.installs.get(key);
    if (!pending) {
      const dir = this.folder(name, version);
      if (await this.isInstalled(dir)) {
        onStep?.('cached', version);
        return { name, version, dir };
      }
      // Another save may have started this install while we looked at the folder.
      pending = this.installs.get(key);
    }
    if (!pending) {
      pending = this.install(name, version).finally(() => this.installs.delete(key));
      this.installs.set(key, pending);
    }
    onStep?.('installing', version);
    const pkg = await pending;
    onStep?.('installed', version);
    return pkg;
  }

  /** The file `require(name + subpath)` loads from the install folder. */
  resolveFile(pkg: InstalledPackage, subpath: string): string {
    return createRequire(path.join(pkg.dir, 'package.json')).resolve(pkg.name + subpath);
  }

  private async resolveVersion(name: string, range: string, onStep: PackageStepListener | undefined): Promise<string> {
    if (EXACT.test(range)) return range;
    const key = `${name}@${range}`;
    const known = this.resolutions.get(key);
    if (known && Date.now() - known.at < RESOLUTION_TTL_MS) return known.version;
    onStep?.('resolving', range);
    await fs.mkdir(this.root, { recursive: true });
    let version: string | undefined;
    try {
      // Publication order is not version order (a backported patch comes after a newer major).
      version = (await this.npm.versions(key, this.root)).sort(compareVersions).at(-1);
    } catch (error) {
      // Unreachable registry: an unpinned import may still use the newest copy already installed.
      if (range === 'latest') version = await this.newestInstalled(name);
      if (version === undefined) throw error;
      this.logger.warn({ package: name, version, err: error }, 'npm unreachable; using the newest installed version');
    }
    if (version === undefined) throw new Error(`no published version of ${shorten(name)} matches ${quote(range)}`);
    this.resolutions.set(key, { version, at: Date.now() });
    return version;
  }

  private async newestInstalled(name: string): Promise<string | undefined> {
    const parent = path.dirname(this.folder(name, '0'));
    const prefix = `${path.basename(name)}@`;
    const entries = await fs.readdir(parent).catch(() => [] as string[]);
    const versions: string[] = [];
    for (const entry of entries) {
      if (entry.startsWith(prefix) && (await this.isInstalled(path.join(parent, entry)))) versions.push(entry.slice(prefix.length));
    }
    return versions.sort(compareVersions).at(-1);
  }

  private async install(name: string, version: string): Promise<InstalledPackage> {
    const dir = this.folder(name, version);
    const pkg = { name, version, dir };
    if (await this.isInstalled(dir)) return pkg;
    // Install beside the cache entry, then rename: another server process on the same data folder may race us,
    // and whichever rename lands first wins while a half-installed folder is never visible.
    const temp = path.join(this.root, '.tmp', `${name.replace('/', '+')}@${version}-${randomBytes(6).toString('hex')}`);
    await fs.mkdir(temp, { recursive: true });
    try {
      await fs.writeFile(path.join(temp, 'package.json'), JSON.stringify({ name: 'tributary-package-cache-entry', private: true }));
      const started = Date.now();
      await this.npm.install(`${name}@${version}`, temp);
      const problem = await installProblem(temp);
      if (problem !== undefined) throw new Error(problem);
      await fs.writeFile(path.join(temp, MARKER), JSON.stringify({ name, version, installedAt: new Date().toISOString(), checks: CHECKS }));
      await fs.mkdir(path.dirname(dir), { recursive: true });
      try {
        await fs.rename(temp, dir);
      } catch (error) {
        if (!(await this.isInstalled(dir))) throw error;
      }
      this.logger.info({ package: name, version, ms: Date.now() - started }, 'installed npm package');
      return pkg;
    } finally {
      await fs.rm(temp, { recursive: true, force: true });
    }
  }
}
