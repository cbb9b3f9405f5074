// Sign-in: checks the API key with GET /v1/users/me before keeping it in session storage.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, describeError } from './api';
import type { Notice } from './notices';
import { storeKey } from './session';

/**
 * Why `key` cannot be a key, before it is sent: a header cannot carry a character past Latin-1, so fetch() threw and
 * the page said "Cannot reach the server" for the README's own `trb_…` pasted as it stands, or a key that brought a
 * zero-width space along. A key is printable ASCII without spaces; the first character that is not is named.
 */
export function keyProblem(key: string): string | undefined {
  const at = [...key].findIndex((char) => !/^[\x21-\x7e]$/.test(char));
  if (at < 0) return undefined;
  const char = [...key][at] as string;
  const code = `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  const shown = /^\s$/u.test(char) || /\p{C}/u.test(char) ? code : `"${char}" (${code})`;
  return `That is not an API key: character ${at + 1} is ${shown}, and a key is letters, digits and punctuation only, without spaces. Paste the key as it was printed.`;
}

export function SignIn(props: { message?: Notice; onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  // Why this page shows is about the session that ended: once another key is tried, what is said is about that one.
  const [tried, setTried] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  // The page's one field: typing starts there.
  useEffect(() => field.current?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError('Enter your API key.');
      return;
    }
    const problem = keyProblem(trimmed);
    if (problem) {
      setError(problem);
      field.current?.focus();
      return;
    }
    if (busy) return;
    setBusy(true);
    setTried(true);
    try {
      await api('GET', '/users/me', undefined, trimmed);
      storeKey(trimmed);
      props.onSignedIn();
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? `That key was not accepted: ${failure.message}.` : describeError(failure));
      // The key is what to fix (or to send again): the focus goes back to it, wherever Sign in was pressed from.
      field.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Tributary</h1>
      <form onSubmit={submit} noValidate>
        <p class="hint">
          Sign in with an API key (<code>trb_…</code>, printed by <code>tributary serve</code> or <code>tributary users create</code>). It is kept in this tab's
          session storage only, and sent to this server as a Bearer header.
        </p>
        {props.message && !tried && (
          <p class={props.message.kind === 'error' ? 'error' : 'ok'} role={props.message.kind === 'error' ? 'alert' : 'status'}>
            {props.message.text}
          </p>
        )}
        <label for="api-key">API key</label>
        <input
          ref={field}
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => {
            setKey(e.currentTarget.value);
            // The error was about the key as it was.
            setError(undefined);
          }}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'api-key-error' : undefined}
        />
        <p id="api-key-error" class="field-error" role={error ? 'alert' : undefined}>
          {error ?? ''}
        </p>
        {/* aria-disabled rather than disabled while busy: a disabled button drops the keyboard focus to the document. */}
        <button type="submit" aria-disabled={busy ? 'true' : undefined}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
