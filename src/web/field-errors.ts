// A form's errors by field and the line above its button: a field's error goes as soon as the field is edited, and
// the line that only pointed at the marked fields goes with the last of them, so that what is shown is what is wrong.
import { useState } from 'preact/hooks';
import type { FieldErrors } from './prop-form';

export interface FormErrors {
  fields: FieldErrors;
  /** The line above the button: the reason that names no field, else while any field is marked, `pointer`. */
  summary: string | undefined;
  /** Marks `fields` (a check before sending, a refusal); `general` names no field; `pointer` sends the eye to the fields. */
  show: (fields: FieldErrors, general: string | undefined, pointer: string) => void;
  /** The field `name` was edited: its error, which was about the value it held, goes. */
  edited: (name: string) => void;
}

export function useFormErrors(): FormErrors {
  const [state, setState] = useState<{ fields: FieldErrors; general?: string; pointer?: string }>({ fields: {} });
  const marked = Object.keys(state.fields).length > 0;
  return {
    fields: state.fields,
    summary: state.general ?? (marked ? state.pointer : undefined),
    show: (fields, general, pointer) => setState({ fields, general, pointer }),
    edited: (name) =>
      setState((previous) => {
        if (!(name in previous.fields)) return previous;
        const { [name]: _fixed, ...fields } = previous.fields;
        return { ...previous, fields };
      }),
  };
}

/** The pointers of a check before sending and of a server's refusal. */
export const FIX_MARKED = 'Some values need fixing: see the marked fields.';
export const REFUSED_MARKED = 'The server refused some values: see the marked fields.';

/** A refusal read for a form: messages on the fields they name, and what names no field for the line above the button. */
export interface Refusal {
  fields: FieldErrors;
  general: string | undefined;
}

/** Moves the keyboard to the first field marked invalid, once the marks are drawn, so that the user lands on the problem. */
export function focusFirstInvalid(form: HTMLFormElement | null): void {
  requestAnimationFrame(() => form?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
}

/**
 * One press of a form's button. Fields `found` wrong before sending are marked and nothing is sent; else the old marks
 * go and `send` runs, and what it throws is marked where `refusal` places it. The keyboard lands on the first mark.
 */
export async function sendChecked(
  form: HTMLFormElement,
  errors: FormErrors,
  found: FieldErrors,
  send: () => Promise<void>,
  refusal: (failure: unknown) => Refusal,
): Promise<void> {
  if (Object.keys(found).length) {
    errors.show(found, undefined, FIX_MARKED);
    focusFirstInvalid(form);
    return;
  }
  errors.show({}, undefined, '');
  try {
    await send();
  } catch (failure) {
    const { fields, general } = refusal(failure);
    errors.show(fields, general, REFUSED_MARKED);
    focusFirstInvalid(form);
  }
}
