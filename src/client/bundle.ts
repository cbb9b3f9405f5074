// Bundles a component or step file with its relative imports into one module, as the server takes code.
import fs from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { type BuildFailure, type BuildResult, build, type Message, type Metafile } from 'esbuild';

/** A file esbuild could not bundle; each line is `file:line:column: message`, as editors link them. */
export class BundleError extends Error {
  override name = 'BundleError';
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
  }
}

export interface Bundle {
  code: string;
  /** npm packages the code imports, which the server installs when it saves the component (not `@pipedream/platform`, which it has). */
  packages: string[];
  /** Every file of the bundle (absolute paths): what a watcher follows. */
  files: string[];
}

/**
 * A file as messages name it: relative to the working directory when inside it, else absolute, as the user may have
 * typed it: `../../nonexistent.mjs` for `/nonexistent.mjs` names a path nobody gave.
 */
export function shownPath(file: string): string {
  const absolute = path.resolve(file);
  const relative = path.relative(process.cwd(), absolute);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative;
}

/** `file:line:column: message` for an esbuild message, relative to the working directory. */
export function messageLine(message: Message): string {
  const where = message.location ? `${shownPath(message.location.file)}:${message.location.line}:${message.location.column + 1}: ` : '';
  return `${where}${message.text}`;
}

/** The package name of a bare import (`lodash/get` → `lodash`, `@scope/pkg/x` → `@scope/pkg`). */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

export function bundleOf(code: string, metafile: Metafile): Bundle {
  const packages = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) if (imported.external && !isBuiltin(imported.path)) packages.add(packageName(imported.path));
  }
  // The server serves its own copy of the platform package and installs nothing for it.
  packages.delete('@pipedream/platform');
  return { code, packages: [...packages].sort(), files: Object.keys(metafile.inputs).map((input) => path.resolve(input)) };
}

/**
 * Whether the bundle calls `require()` of an npm package. In an ES module esbuild writes such a call (CommonJS
 * components: `const axios = require("axios")`) as `__require("axios")`, a call of its own helper that the server
 * cannot see as an import, so it would install nothing and the component would fail to load with `Cannot find module`.
 */
function requiresPackages(metafile: Metafile): boolean {
  return Object.values(metafile.outputs).some((output) =>
    output.imports.some((imported) => imported.external && imported.kind === 'require-call' && !isBuiltin(imported.path)),
  );
}

/** The esbuild options of every bundle: npm packages stay imports (the server installs them), `@pipedream/platform` included. */
export function bundleOptions(file: string, format: 'esm' | 'cjs' = 'esm') {
  return {
    entryPoints: [file],
    bundle: true,
    format,
    platform: 'node' as const,
    write: false,
    packages: 'external' as const,
    metafile: true,
    logLevel: 'silent' as const,
    outfile: 'bundle.mjs',
  };
}

/**
 * The bundle of a build made with `bundleOptions(file)`: as it is, or, when it requires npm packages, built again as a
 * CommonJS module, which keeps each `require("pkg")` as written for the server to install (it takes either format).
 */
export async function finishBundle(file: string, result: BuildResult): Promise<Bundle> {
  if (requiresPackages(result.metafile!)) {
    try {
      result = await build(bundleOptions(file, 'cjs'));
    } catch (error) {
      const errors = (error as BuildFailure).errors;
      if (!Array.isArray(errors)) throw error;
      // Top-level await, say: CommonJS cannot hold it, and an ES module cannot show the server its require() calls.
      throw new BundleError([
        ...errors.map(messageLine),
        `${shownPath(file)}: it require()s npm packages, so it is bundled as CommonJS, which cannot hold this; import the packages instead`,
      ]);
    }
  }
  return bundleOf(result.outputFiles![0]!.text, result.metafile!);
}

/**
 * Refuses a component file that is not there (or is a folder) before anything is bundled or sent: esbuild would say
 * `Could not resolve "/abs/path"`, and `dev` would then watch a file that does not exist.
 */
export function checkComponentFile(file: string): void {
  const shown = shownPath(file);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BundleError([`${shown}: ${code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file' : (error as Error).message}`]);
  }
  if (!stat.isFile()) throw new BundleError([`${shown} is a folder, not a component file: give the file, e.g. ${path.join(shown, 'index.mjs')}`]);
}

/** Bundles `file`; a syntax error or a missing relative import is a BundleError naming the file and line. */
export async function bundleFile(file: string): Promise<Bundle> {
  try {
    return await finishBundle(file, await build(bundleOptions(file)));
  } catch (error) {
    const errors = (error as BuildFailure).errors;
    if (Array.isArray(errors)) throw new BundleError(errors.map(messageLine));
    throw error;
  }
}

/** The bundled code alone (tests bundle registry files with it). */
export async function bundleCode(file: string): Promise<string> {
  return (await bundleFile(file)).code;
}
