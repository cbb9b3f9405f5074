// Saved server profiles (`tributary login`): a URL and an API key per name, in the user's config directory, mode 0600.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerAddress } from './api.js';

export const DEFAULT_PROFILE = 'default';

interface ProfilesFile {
  /** The profile used when none is named. */
  current?: string;
  profiles: Record<string, ServerAddress>;
}

/** No server to talk to: no profile, no --url/--key, no TRIBUTARY_URL/TRIBUTARY_KEY, or a URL that is not one. */
export class ProfileError extends Error {
  override name = 'ProfileError';
}

/** A server's address as given (flag, variable or profile), without trailing slashes; anything but http(s) is refused. */
export function serverUrl(raw: string): string {
  let protocol: string | undefined;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'http:' && protocol !== 'https:') throw new ProfileError(`"${raw}" is not a server address: give it as http://host:3000 (or https://…)`);
  return raw.replace(/\/+$/, '');
}

/** `$XDG_CONFIG_HOME/tributary/profiles.json`, `~/.config/tributary/profiles.json` without it. */
export function profilesPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'tributary', 'profiles.json');
}

function readProfiles(file: string): ProfilesFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw new ProfileError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as ProfilesFile;
    if (typeof parsed.profiles !== 'object' || parsed.profiles === null) throw new Error('no "profiles" object');
    return parsed;
  } catch (error) {
    throw new ProfileError(`${file} is not a profiles file (${(error as Error).message}); fix it or delete it and log in again`);
  }
}

/**
 * A profile's name: letters, digits, `.`, `_` and `-`, from a letter or digit. Names are keys of the file's JSON
 * object, where `__proto__` would set the object's prototype instead of saving a profile.
 */
function checkProfileName(name: string): string {
  if (!/^[A-Za-z0-9][\w.-]{0,63}$/.test(name)) {
    throw new ProfileError(`"${name}" is not a profile name: use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  }
  return name;
}

/** Saves a profile and makes it the current one; the file holds keys, so only its owner may read it. */
export function saveProfile(name: string, address: ServerAddress, env: NodeJS.ProcessEnv = process.env): string {
  checkProfileName(name);
  const file = profilesPath(env);
  const profiles = readProfiles(file);
  profiles.profiles[name] = { url: address.url.replace(/\/+$/, ''), key: address.key };
  profiles.current = name;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Written beside and renamed, so that a crash never leaves half a file; created 0600 so the key is never readable by others.
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(profiles, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
  return file;
}

export interface ServerChoice {
  /** --profile, else TRIBUTARY_PROFILE. */
  profile?: string | undefined;
  /** --url and --key override the profile's; TRIBUTARY_URL and TRIBUTARY_KEY likewise. */
  url?: string | undefined;
  key?: string | undefined;
}

/** Where the command talks to: flags, then TRIBUTARY_URL/TRIBUTARY_KEY, then the named or current profile. */
export function resolveServer(choice: ServerChoice, env: NodeJS.ProcessEnv = process.env): ServerAddress & { profile: string | undefined } {
  const named = choice.profile ?? (env.TRIBUTARY_PROFILE || undefined);
  // An empty variable counts as unset, as shells and CI settings often leave them.
  const givenUrl = choice.url ?? (env.TRIBUTARY_URL || undefined);
  const givenKey = choice.key ?? (env.TRIBUTARY_KEY || undefined);
  // Flags or variables that say it all need no profile: a profiles file that does not parse must not stop them.
  if (named === undefined && givenUrl && givenKey) return { url: serverUrl(givenUrl), key: givenKey, profile: undefined };
  const file = profilesPath(env);
  const profiles = readProfiles(file);
  const name = named === undefined ? (profiles.current ?? DEFAULT_PROFILE) : checkProfileName(named);
  const saved = Object.hasOwn(profiles.profiles, name) ? profiles.profiles[name] : undefined;
  if (named !== undefined && !saved) {
    const known = Object.keys(profiles.profiles);
    throw new ProfileError(
      `no profile "${name}" in ${file}${known.length ? ` (profiles: ${known.join(', ')})` : ''}; run tributary login --profile ${name} --url … --key …`,
    );
  }
  const url = givenUrl ?? saved?.url;
  const key = givenKey ?? saved?.key;
  // Name what is missing: given a URL, "no server to talk to" sent the user looking for the wrong thing.
  if (url && !key) throw new ProfileError(`no API key for ${url}: pass --key trb_… (or set TRIBUTARY_KEY), or run tributary login --url ${url} --key trb_…`);
  if (key && !url) throw new ProfileError(`no server URL for the key: pass --url http://host:3000 (or set TRIBUTARY_URL), or run tributary login`);
  if (!url || !key) {
    throw new ProfileError(`no server to talk to: run tributary login --url http://host:3000 --key trb_…, or set TRIBUTARY_URL and TRIBUTARY_KEY`);
  }
  return { url: serverUrl(url), key, profile: saved ? name : undefined };
}
