// The select of a prop's choices (static `options` or those options() loaded): one value, or any number for a list prop.
import type { JSX } from 'preact';

export interface Choice {
  label: string;
  value: string;
}

export function toChoice(option: unknown): Choice {
  if (typeof option === 'object' && option !== null && 'value' in option) {
    const { label, value } = option as { label?: unknown; value: unknown };
    return { label: String(label ?? value), value: String(value) };
  }
  return { label: String(option), value: String(option) };
}

/** A list prop's values as the form holds them, one a line: its lines, trimmed, without the empty ones. */
export function linesOf(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** How to choose more than one value of a multiple select. */
export const SEVERAL_HINT = 'Ctrl-click (⌘-click on a Mac) to choose several; Shift-click for a range.';

/**
 * `text` is the field's value as the form holds it: a list prop's values one a line, as its textarea would (so
 * collectValues reads both alike). A list prop (`string[]`) gets a multiple select, any number chosen: a single one let
 * a list take one value only. Values held but not among the choices (stored before, not loaded yet) stay offered.
 */
export function ChoiceSelect(props: {
  common: Record<string, unknown>;
  list: boolean;
  text: string;
  choices: Choice[];
  /** The first, empty choice's text ("Choose…"); a multiple select has none: nothing selected is empty. */
  empty: string;
  onPick: (text: string) => void;
  onFocus?: () => void;
}): JSX.Element {
  const { common, list, text, choices, empty, onPick, onFocus } = props;
  const held = list ? linesOf(text) : text ? [text] : [];
  const offered = [...held.filter((value) => !choices.some((c) => c.value === value)).map((value) => ({ label: value, value })), ...choices];
  const options = offered.map((choice) => (
    <option key={choice.value} value={choice.value} selected={list ? held.includes(choice.value) : undefined}>
      {choice.label}
    </option>
  ));
  if (list) {
    const pick = (e: { currentTarget: HTMLSelectElement }) => onPick(Array.from(e.currentTarget.selectedOptions, (o) => o.value).join('\n'));
    // A plain click chooses one and drops the rest: nothing on a multiple select says how to keep several, so it is said
    // beside it, and read out with it.
    const hintId = `${String(common.id)}-several`;
    const describedBy = [common['aria-describedby'], hintId].filter(Boolean).join(' ');
    return (
      <>
        <select {...common} aria-describedby={describedBy} multiple size={Math.min(Math.max(offered.length, 2), 6)} onChange={pick} onFocus={onFocus}>
          {options}
        </select>
        <span id={hintId} class="hint several">
          {SEVERAL_HINT}
        </span>
      </>
    );
  }
  return (
    <select {...common} value={text} onChange={(e) => onPick(e.currentTarget.value)} onFocus={onFocus}>
      <option value="">{empty}</option>
      {options}
    </select>
  );
}
