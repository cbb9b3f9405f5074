// Which emitters a subscription covers and which of their streams it selects.

/** Emitter globs: every source, every workflow of the account, present and future. */
export const EMITTER_GLOBS = ['dc_*', 'p_*'] as const;

/** The glob that covers an emitter id, if any. */
export function globOf(emitterId: string): string | undefined {
  if (emitterId.startsWith('dc_')) return 'dc_*';
  if (emitterId.startsWith('p_')) return 'p_*';
  return undefined;
}

/**
 * The stream name (`metadata.name`) of an event emitted on `channel`: no channel and `default` are the default
 * stream, whose name is the empty string, so that `event_name=default` and `event_name=` both select it.
 */
export function streamNameOf(channel: string | undefined): string {
  return channel === undefined || channel === 'default' ? '' : channel;
}

/**
 * Whether a subscription's `event_name` selects an event of stream `name` (the summary's `metadata.name`):
 * '' and 'default' the default stream, '$errors' and '$logs' those, anything else that channel.
 */
export function streamMatches(eventName: string, name: string): boolean {
  return streamNameOf(eventName) === name;
}
