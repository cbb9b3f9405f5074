// The form that asks to delete a range of a source's events: its ids are checked before the confirmation is asked for.
import { useState } from 'preact/hooks';
import { compareIds } from './format';
import { focusFirstInvalid, useFormErrors } from './field-errors';

/** What the server takes as an event id (model/events.ts). */
const EVENT_ID = /^\d{1,16}-\d{1,12}$/;

/**
 * `oldest` and `newest` are the ids shown as examples; `onAsk` gets the range once its ids are events' ids in order.
 * `busy`: a deletion runs (its presses are ignored); `deleting`: it is this form's, which its button says.
 * Without the check, a mistyped id was asked about ("Events from x will be deleted"), confirmed, and only then refused
 * by the server, in a notice far from the field.
 */
export function DeleteRangeForm(props: {
  sourceId: string;
  oldest?: string | undefined;
  newest?: string | undefined;
  busy: boolean;
  deleting: boolean;
  onAsk: (start?: string, end?: string) => void;
}) {
  const [range, setRange] = useState({ start: '', end: '' });
  const errors = useFormErrors();
  const submit = (event: Event) => {
    event.preventDefault();
    if (props.busy) return;
    const start = range.start.trim() || undefined;
    const end = range.end.trim() || undefined;
    const found: Record<string, string> = {};
    const example = props.newest ?? '1700000000000-0';
    if (start && !EVENT_ID.test(start)) found.start = `From id must be an event id, <epoch_ms>-<seq> (as ${example}).`;
    if (end && !EVENT_ID.test(end)) found.end = `To id must be an event id, <epoch_ms>-<seq> (as ${example}).`;
    if (start && end && !found.start && !found.end && compareIds(start, end) > 0) found.end = 'To id is older than From id: no event is between them.';
    errors.show(found, undefined, '');
    if (Object.keys(found).length) {
      focusFirstInvalid(event.currentTarget as HTMLFormElement);
      return;
    }
    props.onAsk(start, end);
  };
  const field = (name: 'start' | 'end', label: string, placeholder: string) => {
    const id = `range-${name}-${props.sourceId}`;
    const error = errors.fields[name];
    // One box for the label and its field: on a phone the row wrapped between them, leaving "To id" at the end of a
    // line and its field alone on the next.
    return (
      <span class="pair">
        <label for={id}>{label}</label>
        <input
          id={id}
          value={range[name]}
          placeholder={placeholder}
          spellcheck={false}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={`${id}-error`}
          onInput={(e) => {
            setRange({ ...range, [name]: e.currentTarget.value });
            errors.edited(name);
          }}
        />
      </span>
    );
  };
  return (
    <form class="panel range" noValidate onSubmit={submit}>
      <h3>Delete events</h3>
      <p class="hint">Both ids are included. Only a start: it and every later event. Only an end: it and every earlier one. Neither: all.</p>
      <div class="inline">
        {field('start', 'From id', props.oldest ?? 'oldest')}
        {field('end', 'To id', props.newest ?? 'newest')}
        <button type="submit" class="danger" aria-disabled={props.busy ? 'true' : undefined}>
          {props.deleting ? 'Deleting…' : 'Delete range'}
        </button>
      </div>
      {/* Only when there is one: nothing is below the form to keep in place, and two empty lines would pad the panel. */}
      {(['start', 'end'] as const).map(
        (name) =>
          errors.fields[name] && (
            <p key={name} id={`range-${name}-${props.sourceId}-error`} class="field-error" role="alert">
              {errors.fields[name]}
            </p>
          ),
      )}
    </form>
  );
}
