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
        // aria-disabled while it reads, not disabled: a disabled button drops the keyboard focus to the document, and a
        // read that fails again would leave the keyboard user far from the button to press once more.
        <button
          type="button"
          aria-disabled={failed.loading ? 'true' : undefined}
          onClick={() => {
            if (!failed.loading) props.loads.forEach((load) => load.reload());
          }}
        >
          {failed.loading ? 'Trying…' : 'Try again'}
        </button>
      )}
    </div>
  );
}
