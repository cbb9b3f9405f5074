// Builds the web console (src/web/) into one script and one stylesheet with esbuild, in memory, once per process.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface ConsoleAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

export interface ConsoleBundle {
  /** The page, with the hashed asset names and their integrity hashes filled in. */
  readonly html: string;
  /** By file name (`app-<hash>.js`): a new build gets new names, so a browser may keep each one forever. */
  readonly assets: ReadonlyMap<string, ConsoleAsset>;
}

// This module runs from src/api/ (tests) or dist/api/ (the built server): both two levels below the package root, where
// the console's sources are; tsc leaves them out of dist/ because they are browser code, bundled here instead.
const WEB_DIR = fileURLToPath(new URL('../../src/web/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

let cached: Promise<ConsoleBundle> | undefined;

/** The console, built on first use and kept; a failed build is not kept, so a fixed checkout serves on the next request. */
export function loadConsole(): Promise<ConsoleBundle> {
  cached ??= buildConsole(WEB_DIR).catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

export async function buildConsole(webDir: string): Promise<ConsoleBundle> {
  const result = await build({
    entryPoints: [path.join(webDir, 'main.tsx')],
    absWorkingDir: webDir,
    bundle: true,
    write: false,
    outdir: path.join(webDir, 'out'),
    entryNames: 'app-[hash]',
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const assets = new Map<string, ConsoleAsset>();
  const tags: string[] = [];
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const contentType = CONTENT_TYPES[path.extname(name)];
    if (!contentType) continue;
    const body = Buffer.from(file.contents);
    assets.set(name, { body, contentType });
    // Subresource integrity: a proxy or cache that alters a file makes the browser refuse it instead of running it.
    const integrity = `sha384-${createHash('sha384').update(body).digest('base64')}`;
    tags.push(
      name.endsWith('.css')
        ? `<link rel="stylesheet" href="/console/${name}" integrity="${integrity}">`
        : `<script type="module" src="/console/${name}" integrity="${integrity}"></script>`,
    );
  }
  const template = await fs.readFile(path.join(webDir, 'index.html'), 'utf8');
  // Stylesheet first, so the page is styled before the script draws it.
  tags.sort((a, b) => Number(a.startsWith('<script')) - Number(b.startsWith('<script')));
  return { html: template.replace('<!-- assets -->', tags.join('\n    ')), assets };
}
