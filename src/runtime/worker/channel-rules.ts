// What a channel may be named (`$emit`'s and `$.send.emit()`'s `name`, `$.send.sse()`'s `channel`), worded once: the
// worker refuses it as the component gives it, and the server again in what a worker reports (reported-limits.ts).
import { MAX_CHANNEL_NAME_CHARS } from './limits.js';
import { codePointsOver } from './primordials.js';

/**
 * What is wrong with `name` as the channel of an emitted event, or undefined; `what` names the argument (`$emit name`),
 * `owner` the emitter (`source`). Subscriptions select the `$errors` and `$logs` streams by name, so a channel so named
 * would be delivered as one of them; a channel longer than a subscription's or a live stream's `event_name` (200
 * characters, code points as the API counts them) could be neither subscribed to nor streamed.
 */
export function channelNameProblem(name: string, what: string, owner: string): string | undefined {
  if (name === '$errors' || name === '$logs') return `${what} "${name}" is reserved for the ${owner}'s ${name} stream`;
  return sseChannelProblem(name, `${what} (the channel)`);
}

/** `channel` past the length of a channel; `what` names it (`$.send.sse(): channel`). */
export function sseChannelProblem(channel: string, what: string): string | undefined {
  return codePointsOver(channel, MAX_CHANNEL_NAME_CHARS) !== undefined ? `${what} may be at most ${MAX_CHANNEL_NAME_CHARS} characters` : undefined;
}
