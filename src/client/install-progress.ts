// Saves through the server's progress routes, printing each npm install step as the server takes it; on an older
// server without them, the plain route, with a word on why nothing is said while it installs.
import type { ApiClient } from './api.js';

/** A `progress` event's data (README, Components: install progress). */
export interface InstallProgressEvent {
  step: 'resolving' | 'installing' | 'installed' | 'cached';
  package: string;
  version: string;
  index: number;
  total: number;
  elapsed_ms: number;
  workflow_step?: string;
}

/** A save: its plain route, and the progress route that takes the same body. */
export interface SaveRequest {
  method: 'POST' | 'PUT';
  path: string;
  streamPath: string;
  body: unknown;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Turns progress events into lines: `installing axios@1.7.2 (1/2)… 0.4 s` (the time since the server took the
 * request), `installed axios@1.7.2 (1/2) in 2.1 s` (the install's own time), `axios@1.7.2 (1/2) is already installed`.
 */
export function progressLines(): (event: InstallProgressEvent) => string {
  const installing = new Map<string, number>();
  return (event) => {
    const what = `${event.package}@${event.version} (${event.index}/${event.total})`;
    const where = event.workflow_step === undefined ? '' : `step "${event.workflow_step}": `;
    const id = `${where}${event.package}@${event.version}`;
    switch (event.step) {
      case 'resolving':
        return `  ${where}resolving ${what}… ${seconds(event.elapsed_ms)}`;
      case 'installing':
        installing.set(id, event.elapsed_ms);
        return `  ${where}installing ${what}… ${seconds(event.elapsed_ms)}`;
      case 'installed':
        return `  ${where}installed ${what} in ${seconds(event.elapsed_ms - (installing.get(id) ?? 0))}`;
      case 'cached':
        return `  ${where}${what} is already installed`;
      default:
        return `  ${where}${String(event.step)} ${what}`;
    }
  };
}

/**
 * Saves through `streamPath`, printing a line per install step on `progress`; falls back to `path` when the server has
 * no such route (it answers 404), printing `fallbackNote` first when there is one.
 */
export async function saveWithProgress<T>(api: ApiClient, request: SaveRequest, progress: (line: string) => void, fallbackNote?: string): Promise<T> {
  const line = progressLines();
  const streamed = await api.stream<T>(request.method, request.streamPath, request.body, (data) => progress(line(data as InstallProgressEvent)));
  if (streamed !== undefined) return streamed;
  if (fallbackNote !== undefined) progress(`  ${fallbackNote}`);
  // The plain route answers once npm is done, however long that takes: it waits as component code does.
  return api.call<T>(request.method, request.path, request.body, 'code');
}
