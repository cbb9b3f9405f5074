// A modal question before something that cannot be undone: the browser's <dialog> traps focus and Escape cancels.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function ConfirmDialog(props: { title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    // Gone (answered or cancelled), focus goes back to what opened it, if it is still on the page.
    return () => {
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" onClick={props.onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
