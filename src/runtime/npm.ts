// Runs the npm client for the package cache: lifecycle scripts off, in an environment built from nothing.
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { RuntimeLogger } from './options.js';

export class NpmError extends Error {
  override name = 'NpmError';
}

const NPM_TIMEOUT_MS = 5 * 60_000;

/**
 * The npm settings taken from the server's environment: where the registry is and how to reach it. Not the others
 * that `npm start` sets (a `local_prefix` would send installs into the server's own folder).
 */
const NPM_SETTINGS_PASSED =
  /^npm_config_(registry|@[^:]+:registry|cafile|ca|strict_ssl|proxy|https_proxy|noproxy|fetch_retries|fetch_retry_mintimeout|fetch_retry_maxtimeout|fetch_timeout)$/i;

/** npm's own error lines, without the pointer to its debug log (a server path of no use to the author). */
function errorSummary(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^npm (error|ERR!)/.test(line) && !/complete log of this run|A complete log/i.test(line))
    .map((line) => line.replace(/^npm (error|ERR!)\s*/, '').replace(/\s+/g, ' '))
    // Bare status lines ("404", "code E404") and npm's advice about tarballs and git URLs say nothing here.
    .filter((line) => line.length > 12 && !/^code \w+$/.test(line) && !/Note that you can also install|tarball, folder/.test(line));
  const text = lines.slice(0, 2).join('; ') || stderr.trim().split('\n').slice(-3).join('; ');
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

export class Npm {
  constructor(
    private readonly home: string,
    private readonly cache: string,
    private readonly logger: RuntimeLogger,
  ) {}

  /**
   * Only what npm needs; the server's other variables (secrets among them) never reach npm or the packages it
   * fetches. The operator's settings for reaching a registry do (NPM_SETTINGS_PASSED); not their ~/.npmrc, whose
   * tokens for private packages would serve every account. Tributary's own (cache, no update check) come last and win.
   */
  private env(): Record<string, string> {
    const passed = Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && NPM_SETTINGS_PASSED.test(entry[0]));
    return {
      ...Object.fromEntries(passed),
      PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
      HOME: this.home,
      npm_config_cache: this.cache,
      npm_config_update_notifier: 'false',
    };
  }

  private run(args: string[], cwd: string): Promise<string> {
    this.logger.debug({ npm: args, cwd }, 'running npm');
    return new Promise((resolve, reject) => {
      execFile('npm', args, { cwd, env: this.env(), timeout: NPM_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
        if (error) reject(new NpmError(errorSummary(String(stderr)) || error.message));
        else resolve(String(stdout));
      });
    });
  }

  /** The published versions matching `spec` (`name@range` or `name@tag`), oldest first. */
  async versions(spec: string, cwd: string): Promise<string[]> {
    const out = await this.run(['view', '--json', '--', spec, 'version'], cwd);
    if (out.trim() === '') return [];
    const parsed: unknown = JSON.parse(out);
    const list = Array.isArray(parsed) ? parsed : [parsed];
    return list.filter((v): v is string => typeof v === 'string');
  }

  /** Installs `spec` with its dependencies into `dir`, which must hold a package.json. */
  async install(spec: string, dir: string): Promise<void> {
    await this.run(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--omit=dev', '--loglevel=error', '--', spec], dir);
  }
}
