// A timer prop's inputs: an interval of at least the server's shortest, or a cron expression and its time zone.
import type { ComponentChildren } from 'preact';

/**
 * The shortest timer interval the server accepts (`--min-timer-interval`), which it tells in the page; 15 s, its
 * default, should the page not say. Checked here so that the user learns it before the deploy's 422.
 */
export function minTimerInterval(): number {
  const told = Number(document.querySelector<HTMLMetaElement>('meta[name="tributary-min-timer-interval"]')?.content);
  return Number.isSafeInteger(told) && told >= 1 ? told : 15;
}

/** The shortest interval in words: "15 seconds", "1 second". */
export function minTimerIntervalText(): string {
  const seconds = minTimerInterval();
  return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
}

type Setter = (name: string, value: string | boolean, also?: Record<string, string | boolean>) => void;

/** The timer's schedule, `<name>.mode` telling which of the two inputs holds it; `children` are its help and error lines. */
export function TimerField(props: {
  label: string;
  name: string;
  id: string;
  common: Record<string, unknown>;
  describedBy: string;
  raw: Record<string, string | boolean>;
  set: Setter;
  children: ComponentChildren;
}) {
  const text = typeof props.raw[props.name] === 'string' ? (props.raw[props.name] as string) : '';
  const mode = props.raw[`${props.name}.mode`] === 'cron' ? 'cron' : 'interval';
  return (
    <fieldset class="field">
      <legend>{props.label}</legend>
      <div class="inline">
        <label for={`${props.id}-mode`}>Schedule</label>
        <select
          id={`${props.id}-mode`}
          value={mode}
          onChange={(e) => {
            // An interval is no cron expression, nor the other way round: the box starts empty.
            props.set(`${props.name}.mode`, e.currentTarget.value, { [props.name]: '' });
          }}
        >
          <option value="interval">Every N seconds</option>
          <option value="cron">Cron expression</option>
        </select>
      </div>
      <label for={props.id}>{mode === 'cron' ? 'Cron expression' : 'Interval in seconds'}</label>
      {mode === 'cron' ? (
        <>
          <input {...props.common} type="text" spellcheck={false} value={text} onInput={(e) => props.set(props.name, e.currentTarget.value)} />
          {/* Kept as stored: a save without it would move the schedule to UTC. */}
          <label for={`${props.id}-timezone`}>Time zone</label>
          <input
            id={`${props.id}-timezone`}
            type="text"
            spellcheck={false}
            placeholder="UTC"
            value={typeof props.raw[`${props.name}.timezone`] === 'string' ? (props.raw[`${props.name}.timezone`] as string) : ''}
            onInput={(e) => props.set(`${props.name}.timezone`, e.currentTarget.value)}
          />
        </>
      ) : (
        <>
          <input
            {...props.common}
            aria-describedby={`${props.id}-min ${props.describedBy}`}
            type="number"
            min={minTimerInterval()}
            step={1}
            value={text}
            onInput={(e) => props.set(props.name, e.currentTarget.value)}
          />
          <p id={`${props.id}-min`} class="hint">
            At least {minTimerIntervalText()}: the server refuses shorter intervals.
          </p>
        </>
      )}
      {props.children}
    </fieldset>
  );
}
