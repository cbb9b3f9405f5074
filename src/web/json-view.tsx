// Any JSON value as a tree whose objects and arrays fold and unfold (native <details>: keyboard and screen readers know it).
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';

/** Levels open at first: an event summary's `event` and what it holds (an `$errors` event's `error`) show at once. */
const OPEN_DEPTH = 3;
/** An object or array with more entries than this starts folded: a large event opens at once, not in a second. */
const OPEN_AT_MOST = 100;

export function JsonView(props: { value: unknown; label?: string }) {
  // Another value starts with its own folds, not those the previous one was left with.
  const shown = useRef({ value: props.value, generation: 0 });
  if (shown.current.value !== props.value) shown.current = { value: props.value, generation: shown.current.generation + 1 };
  return (
    <figure class="json" aria-label={props.label}>
      <JsonNode key={shown.current.generation} value={props.value} depth={0} />
    </figure>
  );
}

function JsonNode(props: { value: unknown; depth: number; name?: string }) {
  const { value, depth, name } = props;
  const key = name !== undefined && <span class="json-key">{JSON.stringify(name)}: </span>;
  if (value === null || typeof value !== 'object') {
    return (
      <div class="json-leaf">
        {key}
        <span class={`json-${value === null ? 'null' : typeof value}`}>{value === undefined ? 'undefined' : JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries: Array<[string | undefined, unknown]> = Array.isArray(value) ? value.map((v) => [undefined, v]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    return (
      <div class="json-leaf">
        {key}
        {open}
        {close}
      </div>
    );
  }
  const count = Array.isArray(value) ? `${entries.length} item${entries.length === 1 ? '' : 's'}` : `${entries.length} key${entries.length === 1 ? '' : 's'}`;
  return (
    <FoldedEntries summary={[key, open, ' ', <span class="muted">{count}</span>]} startOpen={depth < OPEN_DEPTH && entries.length <= OPEN_AT_MOST}>
      <div class="json-children">
        {entries.map(([entryName, entry], i) => (
          <JsonNode key={entryName ?? i} value={entry} depth={depth + 1} name={entryName} />
        ))}
      </div>
      <div>{close}</div>
    </FoldedEntries>
  );
}

/** A fold whose contents are made only once it is opened: folded parts of a large value cost nothing. */
function FoldedEntries(props: { summary: ComponentChildren; startOpen: boolean; children: ComponentChildren }) {
  const [open, setOpen] = useState(props.startOpen);
  return (
    <details open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>{props.summary}</summary>
      {open && props.children}
    </details>
  );
}
