// Any JSON value as a tree whose objects and arrays fold and unfold (native <details>: keyboard and screen readers know it).

const OPEN_DEPTH = 2;

export function JsonView(props: { value: unknown; label?: string }) {
  return (
    <figure class="json" aria-label={props.label}>
      <JsonNode value={props.value} depth={0} />
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
    <details open={depth < OPEN_DEPTH}>
      <summary>
        {key}
        {open} <span class="muted">{count}</span>
      </summary>
      <div class="json-children">
        {entries.map(([entryName, entry], i) => (
          <JsonNode key={entryName ?? i} value={entry} depth={depth + 1} name={entryName} />
        ))}
      </div>
      <div>{close}</div>
    </details>
  );
}
