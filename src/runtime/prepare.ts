// Checks and bundles a component's code without running it: imports resolved, packages installed, one loadable file written.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { createRequire, isBuiltin } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { LRUCache } from 'lru-cache';
import type { BundleNames } from './bundle-names.js';
import { locatePlatform } from './locations.js';
import type { RuntimeLogger } from './options.js';
import { type InstalledPackage, parsePackageImport, type PackageCache, type PackageImport } from './packages.js';
import { ComponentLoadError, type InstallListener, type InstallProgress, type PreparedComponent } from './types.js';
import { quote } from './worker/quote.js';

const PLATFORM = '@pipedream/platform';
const PLATFORM_NAMESPACE = 'tributary-platform';
/** Marks our own fallback resolution, so the plugin lets esbuild's resolver answer it. */
const RAW_RESOLVE = Symbol('raw-resolve');

/** What a component's imports turned out to need. */
interface Needs {
  packages: Record<string, string>;
  readPaths: Set<string>;
  /** One install per package import (name and range), however many specifiers name it (`lodash/get`, `lodash/set`). */
  installs: Map<string, Promise<InstalledPackage>>;
  /** Each package import's place in the progress reports (from 1), and their count. */
  order: { indexes: Map<string, number>; total: number };
  /** The code is an ES module (import/export, no CommonJS): its imports of CommonJS packages follow Node's rules. */
  esm: boolean;
  /** How esbuild reads the code: JavaScript, or TypeScript when only that parses it (its types are stripped). */
  loader: 'js' | 'ts';
  /** Code that parses as neither: where TypeScript stopped, said instead of JavaScript's error when it lies further on. */
  typescriptError?: esbuild.Message | undefined;
  report: InstallListener;
}

/** One preparation in flight: its listeners, and what it said so far (a save that joins late hears it first). */
interface Preparation {
  promise: Promise<PreparedComponent>;
  listeners: Set<InstallListener>;
  said: InstallProgress[];
}

/** The key of a package import: one install and one line of progress each. */
function importKey(parsed: PackageImport): string {
  return `${parsed.name}@${parsed.range ?? ''}`;
}

/** Reports each package of an already prepared component as cached, in the order it was installed (the manifest's). */
function reportCached(packages: Record<string, string>, listener: InstallListener): void {
  const names = Object.keys(packages);
  for (const [i, name] of names.entries()) listener({ step: 'cached', name, version: packages[name]!, index: i + 1, total: names.length });
}

/** Calls each listener; one that throws is its caller's problem, never the preparation's. */
function tell(listeners: Iterable<InstallListener>, progress: InstallProgress): void {
  for (const listener of listeners) {
    try {
      listener(progress);
    } catch {
      // A client gone away is no reason to fail a save.
    }
  }
}

/** Saved next to the bundle: preparing the same code again needs neither esbuild nor npm. */
interface Manifest {
  packages: Record<string, string>;
  readPaths: string[];
  /** How the bundle reads a default import of a CommonJS package; an ES module's bundle made before it was written is made again. */
  interop?: typeof INTEROP;
}

/** ES module code gets Node's interop: `import x from "cjs"` is the package's `module.exports`, even with `__esModule`. */
const INTEROP = 'node';

/** The name stacks and source maps give the component's code, whichever name esbuild was given to read it. */
const SOURCE_NAME = 'component.js';

/**
 * esbuild reads a default import of a CommonJS package as Node does (`module.exports`, not `exports.default` when the
 * package sets `__esModule`) only in a `.mjs` file; the bundle's source map then names it `component.mjs`, put back here.
 */
function renameInlineSource(bundle: string, from: string): string {
  const marker = '//# sourceMappingURL=data:application/json;base64,';
  const at = bundle.lastIndexOf(marker);
  if (at < 0) return bundle;
  const map = JSON.parse(Buffer.from(bundle.slice(at + marker.length).trim(), 'base64').toString('utf8')) as { sources?: string[] };
  map.sources = map.sources?.map((source) => (source === from ? SOURCE_NAME : source));
  return `${bundle.slice(0, at)}${marker}${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

/**
 * `@pipedream/platform` as components expect it: Tributary's installed copy, plus the identity helpers
 * (`defineComponent`, …) that TypeScript-era components call and that the package itself does not export.
 */
function platformModule(entry: string): string {
  return [
    `const platform = require(${JSON.stringify(entry)});`,
    'const identity = (definition) => definition;',
    'module.exports = { defineComponent: identity, defineApp: identity, defineSource: identity, defineAction: identity, ...platform };',
  ].join('\n');
}

async function writeAtomically(file: string, contents: string): Promise<void> {
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.writeFile(temp, contents);
  // Readable by the worker user whatever the umask (workers may run as another user; worker-user.ts).
  await fs.chmod(temp, 0o644);
  await fs.rename(temp, file);
}

/** esbuild columns count from 0; people count from 1. */
function syntaxError(message: esbuild.Message): ComponentLoadError {
  const location = message.location;
  if (!location) return new ComponentLoadError('syntax_error', message.text);
  const column = location.column + 1;
  return new ComponentLoadError('syntax_error', `${message.text} (line ${location.line}, column ${column})`, {
    line: location.line,
    column,
  });
}

/** Installs the package of a bare import (once per version) and finds the file the worker will require. */
async function packageFile(build: esbuild.PluginBuild, packages: PackageCache, parsed: PackageImport, needs: Needs): Promise<string> {
  const key = importKey(parsed);
  let pending = needs.installs.get(key);
  if (!pending) {
    // An import the scan did not see still gets a place, at the end.
    if (!needs.order.indexes.has(key)) needs.order.indexes.set(key, ++needs.order.total);
    const index = needs.order.indexes.get(key)!;
    const { total } = needs.order;
    pending = packages.ensure(parsed.name, parsed.range, (step, version) => needs.report({ step, name: parsed.name, version, index, total }));
    needs.installs.set(key, pending);
  }
  const pkg = await pending;
  needs.packages[pkg.name] = pkg.version;
  needs.readPaths.add(pkg.dir);
  try {
    return packages.resolveFile(pkg, parsed.subpath);
  } catch {
    // A package that only offers an ES module entry: esbuild knows the `import` condition.
    const wanted = pkg.name + parsed.subpath;
    const resolved = await build.resolve(wanted, { kind: 'import-statement', resolveDir: pkg.dir, pluginData: RAW_RESOLVE });
    if (resolved.errors.length > 0 || !resolved.path) throw new Error(`${quote(wanted)} is not a module of the installed package`);
    return resolved.path;
  }
}

export class Preparer {
  /** Prepared components kept in memory by code hash: callers prepare the same code before every batch of runs. */
  private readonly remembered = new LRUCache<string, PreparedComponent>({ max: 1000 });
  /** Preparations in flight by code hash: concurrent saves of one code share one (a failed one is forgotten). */
  private readonly preparing = new Map<string, Preparation>();

  constructor(
    private readonly codeDir: string,
    private readonly names: BundleNames,
    private readonly packages: PackageCache,
    private readonly logger: RuntimeLogger,
  ) {}

  /** `onProgress` hears each npm package the code imports being resolved and installed, or found in the cache. */
  prepare(code: string, onProgress?: InstallListener): Promise<PreparedComponent> {
    // The code's SHA-256 is what the API shows (`code_hash`); its bundle's file name is a keyed hash (bundle-names.ts).
    const codeHash = createHash('sha256').update(code).digest('hex');
    const known = this.remembered.get(codeHash);
    if (known) {
      if (onProgress) reportCached(known.packages, onProgress);
      return Promise.resolve(known);
    }
    let preparation = this.preparing.get(codeHash);
    if (!preparation) {
      const listeners = new Set<InstallListener>();
      const said: InstallProgress[] = [];
      const report = (progress: InstallProgress) => {
        said.push(progress);
        tell(listeners, progress);
      };
      const promise = this.prepareHash(code, codeHash, report)
        .then((prepared) => {
          const frozen = Object.freeze(prepared);
          this.remembered.set(codeHash, frozen);
          return frozen;
        })
        // Before any caller resumes: a save arriving after this finds the remembered result, or starts afresh.
        .finally(() => this.preparing.delete(codeHash));
      preparation = { promise, listeners, said };
      this.preparing.set(codeHash, preparation);
    }
    if (onProgress) {
      for (const progress of preparation.said) tell([onProgress], progress);
      preparation.listeners.add(onProgress);
    }
    return preparation.promise;
  }

  private async prepareHash(code: string, codeHash: string, report: InstallListener): Promise<PreparedComponent> {
    const bundleName = this.names.code(code);
    const artifactPath = path.join(this.codeDir, `${bundleName}.cjs`);
    const manifestPath = path.join(this.codeDir, `${bundleName}.json`);
    let cached = await this.readManifest(artifactPath, manifestPath);
    if (cached && cached.interop !== INTEROP) {
      // Made before ES modules got Node's interop: only an ES module's bundle reads differently now, and only it is
      // made again (its unpinned imports resolved anew); a CommonJS bundle is kept, and its manifest says so from now on.
      if ((await this.packageOrder(code)).esm) cached = undefined;
      else {
        cached = { ...cached, interop: INTEROP };
        await writeAtomically(manifestPath, JSON.stringify(cached));
      }
    }
    if (cached) {
      reportCached(cached.packages, report);
      return { codeHash, artifactPath, readPaths: cached.readPaths, packages: cached.packages };
    }

    await fs.mkdir(this.codeDir, { recursive: true });
    const { order, esm, loader, typescriptError } = await this.packageOrder(code);
    const needs: Needs = { packages: {}, readPaths: new Set(), installs: new Map(), order, esm, loader, typescriptError, report };
    const bundle = await this.bundle(code, needs);
    const manifest: Manifest = { packages: needs.packages, readPaths: [...needs.readPaths].sort(), interop: INTEROP };
    await writeAtomically(artifactPath, bundle);
    await writeAtomically(manifestPath, JSON.stringify(manifest));
    this.logger.debug({ codeHash, packages: manifest.packages }, 'prepared component');
    return { codeHash, artifactPath, ...manifest };
  }

  /** A manifest counts only if everything it names is still there (the data folder may have moved or been pruned). */
  private async readManifest(artifactPath: string, manifestPath: string): Promise<Manifest | undefined> {
    try {
      const manifest = JSON.parse(await fs.readFile(manifestPath, 'utf8')) as Manifest;
      await fs.access(artifactPath);
      for (const dir of manifest.readPaths) {
        if (dir.startsWith(this.packages.root + path.sep)) {
          if (!(await this.packages.isInstalled(dir))) return undefined;
        } else {
          await fs.access(dir);
        }
      }
      return manifest;
    } catch {
      return undefined;
    }
  }

  /**
   * The package imports of the code, counted before any is installed, so that progress can say "1 of 2": esbuild
   * parses the code with every import left alone, and lists them in the order the bundle then resolves them, one
   * after the other (import statements, then require calls, then dynamic imports). Code that does not parse counts
   * nothing; the bundle says why. Also says whether the code is an ES module (import/export and no CommonJS), and
   * whether it is TypeScript: code that does not parse as JavaScript but does as TypeScript (a component posted as
   * written in a `.ts` file) has its types stripped, as the reference service runs `.ts` components.
   */
  private async packageOrder(
    code: string,
  ): Promise<{ order: Needs['order']; esm: boolean; loader: Needs['loader']; typescriptError?: esbuild.Message | undefined }> {
    const scanned = await this.scanImports(code);
    if (scanned) return { ...scanned, loader: 'js' };
    // TypeScript drops imports used only as types, or not at all: the scan reads what is left once types are gone,
    // so that progress counts only the packages the bundle installs.
    let typescriptError: esbuild.Message | undefined;
    const stripped = await esbuild.transform(code, { loader: 'ts' }).then(
      (result) => result.code,
      (error: unknown) => void (typescriptError = (error as esbuild.TransformFailure).errors?.[0]),
    );
    const typed = stripped === undefined ? undefined : await this.scanImports(stripped);
    if (typed) return { ...typed, loader: 'ts' };
    return { order: { indexes: new Map(), total: 0 }, esm: false, loader: 'js', typescriptError };
  }

  /** The package imports and module format of JavaScript code; undefined when it does not parse. */
  private async scanImports(code: string): Promise<{ order: Needs['order']; esm: boolean } | undefined> {
    const keys = new Set<string>();
    let esm = false;
    try {
      const scan = await esbuild.build({
        stdin: { contents: code, loader: 'js', sourcefile: SOURCE_NAME, resolveDir: this.codeDir },
        absWorkingDir: this.codeDir,
        bundle: true,
        write: false,
        platform: 'node',
        external: ['*'],
        metafile: true,
        logLevel: 'silent',
      });
      for (const [name, input] of Object.entries(scan.metafile.inputs)) {
        if (name === SOURCE_NAME && input.format === 'esm') esm = true;
        for (const { path: specifier } of input.imports) {
          if (isBuiltin(specifier) || specifier.startsWith('.') || path.isAbsolute(specifier)) continue;
          const parsed = parsePackageImport(specifier);
          if (parsed && parsed.name !== PLATFORM) keys.add(importKey(parsed));
        }
      }
    } catch {
      // Not JavaScript: TypeScript is tried next; code that is neither fails the bundle with its syntax error.
      return undefined;
    }
    return { order: { indexes: new Map([...keys].map((key, i) => [key, i + 1])), total: keys.size }, esm };
  }

  private async bundle(code: string, needs: Needs): Promise<string> {
    const sourcefile = needs.loader === 'ts' ? (needs.esm ? 'component.mts' : 'component.cts') : needs.esm ? 'component.mjs' : SOURCE_NAME;
    let result: esbuild.BuildResult<{ write: false }>;
    try {
      result = await esbuild.build({
        stdin: { contents: code, loader: needs.loader, sourcefile, resolveDir: this.codeDir },
        // Source map paths are relative to this: stack traces then name the component file beside its bundle.
        absWorkingDir: this.codeDir,
        bundle: true,
        write: false,
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        sourcemap: 'inline',
        sourcesContent: false,
        logLevel: 'silent',
        plugins: [this.importPlugin(needs)],
      });
    } catch (error) {
      const failure = error as esbuild.BuildFailure;
      if (!Array.isArray(failure.errors)) throw error;
      // An import the plugin refused carries its typed error; anything else esbuild reports is a syntax problem.
      const typed = failure.errors.map((e) => e.detail as unknown).find((d) => d instanceof ComponentLoadError);
      if (typed) throw typed;
      const first = failure.errors[0];
      // TypeScript with a slip: JavaScript stops at the first type annotation, TypeScript at the slip itself.
      const further = needs.typescriptError?.location && first?.location && needs.typescriptError.location.line > first.location.line;
      if (further) throw syntaxError(needs.typescriptError!);
      throw first ? syntaxError(first) : new ComponentLoadError('syntax_error', failure.message);
    }
    const output = result.outputFiles[0];
    if (!output) throw new Error('esbuild produced no output');
    return sourcefile === SOURCE_NAME ? output.text : renameInlineSource(output.text, sourcefile);
  }

  private importPlugin(needs: Needs): esbuild.Plugin {
    const packages = this.packages;
    return {
      name: 'tributary-imports',
      setup(build) {
        build.onResolve({ filter: /.*/ }, async (args) => {
          if (args.pluginData === RAW_RESOLVE) return undefined;
          // The platform wrapper's own require of the real package.
          if (args.namespace === PLATFORM_NAMESPACE) return { path: args.path, external: true };
          const specifier = args.path;
          if (isBuiltin(specifier)) return { path: specifier, external: true };
          if (specifier.startsWith('.') || path.isAbsolute(specifier)) {
            const kind = specifier.startsWith('.') ? 'relative import' : 'import of the file';
            throw new ComponentLoadError('relative_import', `${kind} ${quote(specifier)} is not supported; bundle it into the component`, {
              import: specifier,
            });
          }
          const parsed = parsePackageImport(specifier);
          if (!parsed) {
            throw new ComponentLoadError('package_install_failed', `${quote(specifier)} is not an npm package name`, { import: specifier });
          }
          if (parsed.name === PLATFORM) {
            // Components get Tributary's own copy, whatever version they name.
            const platform = locatePlatform();
            for (const dir of platform.readPaths) needs.readPaths.add(dir);
            if (parsed.subpath === '') return { path: PLATFORM, namespace: PLATFORM_NAMESPACE };
            try {
              return { path: createRequire(path.join(platform.dir, 'package.json')).resolve(PLATFORM + parsed.subpath), external: true };
            } catch {
              throw new ComponentLoadError('package_install_failed', `${quote(specifier)} is not a module of ${PLATFORM}`, { import: specifier });
            }
          }
          try {
            return { path: await packageFile(build, packages, parsed, needs), external: true };
          } catch (error) {
            const reason = error instanceof Error ? error.message : String(error);
            const wanted = parsed.range === undefined ? parsed.name : `${parsed.name}@${parsed.range}`;
            throw new ComponentLoadError('package_install_failed', `could not install npm package ${quote(wanted)}: ${reason}`, {
              import: specifier,
            });
          }
        });
        build.onLoad({ filter: /.*/, namespace: PLATFORM_NAMESPACE }, () => ({
          contents: platformModule(locatePlatform().entry),
          loader: 'js',
        }));
      },
    };
  }
}
