// The Activate / Deactivate button of a source's and a workflow's page: one request per press, busy until the item is read again.
import { describeError } from './api';
import { useNotify } from './notices';
import { useBusy } from './use-busy';

/**
 * `send` switches the item (a source's PATCH, a workflow's PUT), `reload` reads it again. A double click sends one
 * request, and the button stays busy until the item is read again, so that its label does not go back to what was
 * just pressed.
 */
export function ActiveToggle(props: { active: boolean; name: string; send: (active: boolean) => Promise<unknown>; reload: () => Promise<void> }) {
  const notify = useNotify();
  const activation = useBusy();
  const setActive = (active: boolean) =>
    activation.run(async () => {
      try {
        await props.send(active);
        notify({ kind: 'ok', text: active ? `Activated ${props.name}.` : `Deactivated ${props.name}.` });
        await props.reload();
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      }
    });
  // aria-disabled rather than disabled while busy, as elsewhere: a disabled button loses the keyboard focus.
  return (
    <button type="button" onClick={() => setActive(!props.active)} aria-disabled={activation.busy ? 'true' : undefined}>
      {activation.busy ? (props.active ? 'Deactivating…' : 'Activating…') : props.active ? 'Deactivate' : 'Activate'}
    </button>
  );
}
