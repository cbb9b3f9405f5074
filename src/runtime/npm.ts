// Runs the npm client for the package cache: lifecycle scripts off, in an environment built from nothing.
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { RuntimeLogger } from './options.js';
import { type GateSettings, RegistryGate } from './registry-gate.js';
import { firstCharacters, quote } from './worker/quote.js';

export class NpmError extends Error {
  override name = 'NpmError';
}

const NPM_TIMEOUT_MS = 5 * 60_000;
/** The most characters (code points) of npm's own error lines an install error repeats. */
const MAX_SUMMARY_CHARS = 500;

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
  // Cut by characters, as every limit: a cut by UTF-16 units could end on half an emoji of a package's name or range.
  const head = firstCharacters(text, MAX_SUMMARY_CHARS);
  return head === text ? text : `${head}…`;
}

export class Npm {
  /** gateSettings' answer for the last environment asked about. */
  private readonly settings = new Map<string, GateSettings>();

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

  private run(args: string[], cwd: string, env = this.env()): Promise<string> {
    this.logger.debug({ npm: args, cwd }, 'running npm');
    return new Promise((resolve, reject) => {
      execFile('npm', args, { cwd, env, timeout: NPM_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
        if (error) reject(new NpmError(errorSummary(String(stderr)) || error.message, { cause: String(stderr) }));
        else resolve(String(stdout));
      });
    });
  }

  /** The registries and proxy npm is configured with (its global npmrc and NPM_SETTINGS_PASSED), asked once per environment. */
  private async gateSettings(env: Record<string, string>, cwd: string): Promise<GateSettings> {
    const key = JSON.stringify(env);
    let settings = this.settings.get(key);
    if (settings === undefined) {
      const config = JSON.parse(await this.run(['config', 'list', '--json'], cwd, env)) as Record<string, unknown>;
      const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
      const noProxy = Array.isArray(config.noproxy) ? config.noproxy : String(config.noproxy ?? '').split(',');
      settings = {
        registries: Object.entries(config).flatMap(([name, value]) => (/^(@[^:]+:)?registry$/.test(name) && text(value) ? [String(value)] : [])),
        upstream: text(config['https-proxy']) ?? text(config.proxy),
        noProxy: noProxy.map((entry) => String(entry).trim()).filter(Boolean),
      };
      this.settings.clear();
      this.settings.set(key, settings);
    }
    return settings;
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
    // The operator's proxy settings are the gate's to follow, not npm's (whichever spelling of the name they used).
    const env = this.env();
    const gate = await RegistryGate.open(await this.gateSettings(env, dir));
    try {
      await this.run(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--omit=dev', '--loglevel=error', '--', spec], dir, {
        ...Object.fromEntries(Object.entries(env).filter(([name]) => !/^npm_config_(https_)?proxy$|^npm_config_noproxy$/i.test(name))),
        // Every request npm makes goes through the gate, which reaches the registries only (through the operator's
        // proxy if one is set): a dependency declared as a tarball URL is never fetched from the server's network.
        npm_config_proxy: gate.url,
        npm_config_https_proxy: gate.url,
        npm_config_noproxy: 'tributary-gate.invalid',
        // And git, which npm runs for a git dependency, may use no transport at all (ssh, git://, http, file, ext…);
        // this overrides any protocol.allow in a git config.
        GIT_ALLOW_PROTOCOL: 'tributary-no-git',
        GIT_TERMINAL_PROMPT: '0',
      });
      // npm goes on without an optional dependency it could not fetch.
      if (gate.refused.length > 0) throw new NpmError('refused');
    } catch (error) {
      const refused = gate.refused[0];
      if (refused !== undefined)
        throw new NpmError(`a package in its dependency tree is fetched from ${quote(refused)}, not from the registry (only registry packages are installed)`);
      const transport = error instanceof NpmError ? /transport '([\w+-]+)' not allowed/.exec(String(error.cause)) : null;
      if (transport)
        throw new NpmError(
          `a package in its dependency tree is a git repository (${transport[1]}), not from the registry (only registry packages are installed)`,
        );
      throw error;
    } finally {
      await gate.close();
    }
  }
}
