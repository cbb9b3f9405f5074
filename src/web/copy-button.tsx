// Copies a value to the clipboard and says so in a live region, for a keyboard or screen-reader user too.
import { useState } from 'preact/hooks';

export function CopyButton(props: { value: string; label: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setSaid('Copied');
    } catch {
      // Clipboard access can be refused (no permission, an insecure origin): the value stays selectable beside the button.
      setSaid('Copy refused by the browser: select the text instead');
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy} aria-label={props.label}>
        Copy
      </button>
      <output class="hint">{said}</output>
    </span>
  );
}
