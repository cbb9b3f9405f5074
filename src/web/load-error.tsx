// What a view shows when its data could not be read: the reason, and a way to read it again once the cause is gone.
import type { Loaded } from './use-load';

/**
 * The first error of `loads`, with a button that reads every one of them again (not for a thing that does not exist,
 * deleted say: reading it again cannot help); nothing while none failed.
 */
export function LoadError(props: { loads: Array<Loaded<unknown>> }) {
  const failed = props.loads.find((load) => load.error);
  if (!failed) return null;
  return (
    <div class="error" role="alert">
      <p>{failed.error}</p>
      {!failed.missing && (
        <button type="button" disabled={failed.loading} onClick={() => props.loads.forEach((load) => load.reload())}>
          {failed.loading ? 'Trying…' : 'Try again'}
        </button>
      )}
    </div>
  );
}
