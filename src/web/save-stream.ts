// Saves that may install npm packages (a workflow's code steps), through the `/stream` routes: each install step is
// heard as it happens, so a minute of npm is a list of packages going by, not a frozen button.
import { ApiError, authHeaders, parseAnswer, refusal, UNREACHABLE } from './api';
import { readFrames } from './sse';
import type { InstallStep } from './types';

/**
 * `method` `path` with `body`, answered by `path/stream`: resolves with the body of a success, throws the ApiError
 * of a refusal, whether it came before the save started (plain JSON) or as the stream's `result`.
 */
export async function saveWithProgress<T>(method: 'POST' | 'PUT', path: string, body: unknown, onStep: (step: InstallStep) => void): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`/v1${path}/stream`, {
      method,
      headers: { ...authHeaders(), accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(UNREACHABLE, 0, 'unreachable');
  }
  if (!response.ok || !response.body) throw refusal(response.status, response.statusText, parseAnswer(await response.text()));
  let result: { status: number; body: unknown } | undefined;
  try {
    await readFrames(response.body, (_id, data, event) => {
      if (event === 'progress') onStep(JSON.parse(data) as InstallStep);
      else if (event === 'result') result = JSON.parse(data) as { status: number; body: unknown };
    });
  } catch {
    // The connection broke mid-save: whether the save landed is unknown, and the list will tell.
  }
  if (!result) throw new ApiError('The connection was lost before the server answered: reload the list to see whether the save landed.', 0, 'unreachable');
  if (result.status >= 200 && result.status < 300) return result.body as T;
  throw refusal(result.status, '', result.body);
}
