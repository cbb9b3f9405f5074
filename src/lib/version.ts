// The version of this Tributary build, read once from its package.json (found from this file, so src/ and dist/ agree).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | undefined;

export function tributaryVersion(): string {
  if (version !== undefined) return version;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) return (version = 'unknown');
    dir = parent;
  }
  version = String((JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: unknown }).version ?? 'unknown');
  return version;
}
