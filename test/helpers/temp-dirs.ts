// Temp folders of one test file (data dirs, certificates), removed once the file is done.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const created = new Set<string>();

/** A new empty folder under the system's temp dir, removed after the test file's last hook (see remove-temp-dirs.ts). */
export function tempDir(prefix = 'tributary-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.add(dir);
  return dir;
}

/** Removes every folder tempDir made in this process so far. */
export function removeTempDirs(): void {
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
  created.clear();
}
