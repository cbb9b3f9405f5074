// A modal question before something that cannot be undone: the browser's <dialog> traps focus and Escape cancels.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function ConfirmDialog(props: { title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  /** What had the focus when the question was asked: it gets it back once answered. */
  const opener = useRef<HTMLElement | null>(null);
  const answered = useRef(false);
  useEffect(() => {
    opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    // Gone without an answer (its page left, say): the focus goes back all the same, if the opener is still there.
    return () => {
      if (!answered.current) giveBack();
    };
  }, []);
  // The dialog is closed first: while it is open the rest of the page is inert and focus() there does nothing. Done here,
  // on the answer, not when the dialog leaves the page: Preact runs an effect's cleanup after paint, and meanwhile the
  // focus, dropped with the dialog's button, went to the page's content (#main), where a key pressed then went too.
  const giveBack = () => {
    const element = dialog.current;
    if (element?.open) element.close();
    if (opener.current?.isConnected) opener.current.focus();
  };
  const answer = (then: () => void) => {
    answered.current = true;
    giveBack();
    then();
  };
  return (
    <dialog
      ref={dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        // Escape: closed here, as Cancel closes it, so that the focus goes back the same way.
        event.preventDefault();
        answer(props.onCancel);
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" onClick={() => answer(props.onCancel)} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" onClick={() => answer(props.onConfirm)}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
