// Small file systems mounted for a test (a disk that fills up, a folder that cannot be written): root only.
import { execFileSync } from 'node:child_process';

/** Mounts a tmpfs of `sizeMb` at `dir` (root only); false where that is not allowed, for the test to skip. */
export function mountTmpfs(dir: string, sizeMb: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
