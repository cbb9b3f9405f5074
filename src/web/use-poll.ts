// Reads a view's data again on a timer, each read once the one before has answered, and not while the tab is hidden.
import { useEffect } from 'preact/hooks';
import type { Loaded } from './use-load';

/**
 * How often a list that changes on the server's side (a workflow's runs, a webhook's attempts) is read again while
 * nothing in it is due sooner: a request to the endpoint, a timer or a subscribed event adds rows that no action of the
 * page's own announces, and a list read once stayed as it was ("No runs yet: a request to its endpoint starts one"
 * under the run that request started).
 */
export const IDLE_POLL_MS = 5000;

/**
 * Reads `load` again `delayMs` after its last read answered (no poll when undefined, nor after a 404). A read is not stacked on a slow
 * one, and a hidden tab (another tab in front, a minimised window) is not read for: its next read is made as it shows.
 */
export function usePoll(load: Loaded<unknown>, delayMs: number | undefined): void {
  const { loading, missing, reload } = load;
  useEffect(() => {
    // A 404 (the workflow or webhook deleted meanwhile) does not go away by reading it again.
    if (delayMs === undefined || loading || missing) return;
    const tick = () => {
      if (!document.hidden) {
        reload();
        return;
      }
      document.addEventListener('visibilitychange', tick, { once: true });
    };
    const timer = setTimeout(tick, delayMs);
    return () => {
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', tick);
    };
  }, [delayMs, loading, missing, reload]);
}
