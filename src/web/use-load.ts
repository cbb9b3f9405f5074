// Loads data for a view and keeps it with its error, reloading when asked or when the inputs change.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeError } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** The server said there is no such thing (404): reading it again cannot help. */
  missing: boolean;
  loading: boolean;
  reload: () => Promise<void>;
}

export function useLoad<T>(load: () => Promise<T>, inputs: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [missing, setMissing] = useState(false);
  const [loading, setLoading] = useState(true);
  // The answer of an older request must not overwrite a newer one (inputs changed while it was on its way).
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    try {
      const value = await load();
      if (mine !== generation.current) return;
      setData(value);
      setError(undefined);
      setMissing(false);
    } catch (failure) {
      if (mine !== generation.current) return;
      setError(describeError(failure));
      setMissing(failure instanceof ApiError && failure.status === 404);
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, inputs);
  useEffect(() => {
    reload();
  }, [reload]);
  return { data, error, missing, loading, reload };
}
