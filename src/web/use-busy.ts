// One run of a button's action at a time, so that a double click sends its request once.
import { useRef, useState } from 'preact/hooks';

export interface Busy {
  /** The action is running: for the button's busy label and its aria-disabled. */
  busy: boolean;
  /** Runs `action` unless one is running already (a second press, a double click say, is then ignored). */
  run: (action: () => Promise<void>) => Promise<void>;
}

export function useBusy(): Busy {
  // A ref besides the state: the second press of a double click may come before the page is drawn again.
  const running = useRef(false);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<void>) => {
    if (running.current) return;
    running.current = true;
    setBusy(true);
    try {
      await action();
    } finally {
      running.current = false;
      setBusy(false);
    }
  };
  return { busy, run };
}
