// "Run now": an event typed as JSON, checked before it is sent, and handed to the caller; a refusal shows under it,
// and what became of the run, when the caller follows it, beside the button.
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { ApiError, describeError } from './api';
import { useBusy } from './use-busy';

/**
 * `id` names the field (its error is `<id>-error`); `disabledWhy`, when given, disables the button and says why;
 * `outcome`, what the caller learnt of the last run, is read out as it changes.
 */
export function RunNow(props: { id: string; start: (event: unknown) => Promise<void>; disabledWhy?: string | undefined; outcome?: ComponentChildren }) {
  const [text, setText] = useState('{}');
  const [error, setError] = useState<string | undefined>(undefined);
  // Whether the error is the event's: not JSON, or refused as a request body (400, 422). A 409 or 429 is not: the
  // event was fine, and a red field sent the user looking for a mistake in it.
  const [eventRefused, setEventRefused] = useState(false);
  // One run per press: a second press (a double click) before the first is queued would start a second run.
  const starting = useBusy();
  const field = useRef<HTMLTextAreaElement>(null);
  const run = (event: Event) => {
    event.preventDefault();
    return starting.run(async () => {
      let body: unknown;
      try {
        body = JSON.parse(text || '{}');
      } catch {
        setError('The event must be valid JSON.');
        setEventRefused(true);
        // The field to fix has the keyboard, as in every other form: it stayed on the button, away from the text.
        field.current?.focus();
        return;
      }
      setError(undefined);
      try {
        await props.start(body);
      } catch (failure) {
        setError(describeError(failure));
        setEventRefused(failure instanceof ApiError && (failure.status === 400 || failure.status === 422));
      }
    });
  };
  return (
    <details class="panel">
      <summary>Run now</summary>
      <form onSubmit={run} noValidate>
        <label for={props.id}>Event (JSON)</label>
        <textarea
          ref={field}
          id={props.id}
          class="code"
          rows={4}
          spellcheck={false}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            // The error was about the event as it was (or the run it started).
            setError(undefined);
          }}
          aria-invalid={error && eventRefused ? 'true' : undefined}
          aria-describedby={`${props.id}-error`}
        />
        <p id={`${props.id}-error`} class="field-error" role={error ? 'alert' : undefined}>
          {error ?? ''}
        </p>
        <button type="submit" disabled={props.disabledWhy !== undefined} aria-disabled={starting.busy ? 'true' : undefined} title={props.disabledWhy}>
          {/* Says so while the run is being queued: on a slow server the button only looked held, with nothing said. */}
          {starting.busy ? 'Starting…' : 'Run with this event'}
        </button>
        {/* Always in the page, so that each new outcome is announced (an <output> is a polite live region). */}
        <output id={`${props.id}-outcome`} class="run-outcome" aria-live="polite">
          {props.outcome}
        </output>
      </form>
    </details>
  );
}
