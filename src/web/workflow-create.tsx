// Creating a workflow: a name, a trigger and ordered steps (code, or a saved or registry component), saved through
// the progress route so that the npm packages its code imports are seen installing.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeErrorWithDetails, getEveryPage } from './api';
import { useNotify } from './notices';
import { href, navigate } from './router';
import { saveWithProgress } from './save-stream';
import { InstallProgressView, useInstallProgress } from './install-progress';
import { minTimerInterval, minTimerIntervalText } from './timer-field';
import type { Source, Workflow } from './types';
import { useLoad } from './use-load';

type TriggerKind = 'none' | 'http' | 'interval' | 'cron' | 'source';
type StepOrigin = 'code' | 'component_id' | 'component_key';

interface StepDraft {
  /** Keeps each step's inputs its own while steps are added, moved and removed. */
  key: number;
  name: string;
  origin: StepOrigin;
  /** The code, the saved component's id or the registry key, as `origin` says. */
  text: string;
  /** `configured_props` as JSON text; empty for none. */
  props: string;
}

const STARTER_STEP = `export default defineComponent({
  async run({ steps, $ }) {
    return steps.trigger.event;
  },
});`;

const ORIGIN_LABELS: Record<StepOrigin, string> = { code: 'Code', component_id: 'Saved component id', component_key: 'Registry key' };

/** The form's fields, by the names a 400's `details` give them. */
const SERVER_FIELDS: Record<string, string> = { name: 'workflow-name', timeout_seconds: 'workflow-timeout' };

let nextKey = 1;
const newStep = (index: number): StepDraft => ({ key: nextKey++, name: `step_${index + 1}`, origin: 'code', text: STARTER_STEP, props: '' });

export function WorkflowCreate() {
  const notify = useNotify();
  const sources = useLoad(() => getEveryPage<Source>('/users/me/sources'), []);
  const [name, setName] = useState('');
  const [trigger, setTrigger] = useState<TriggerKind>('none');
  const [customResponse, setCustomResponse] = useState(false);
  const [intervalSeconds, setIntervalSeconds] = useState('3600');
  const [cron, setCron] = useState('0 * * * *');
  const [timezone, setTimezone] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
  const [sourceId, setSourceId] = useState('');
  const [eventName, setEventName] = useState('');
  const [timeoutSeconds, setTimeoutSeconds] = useState('30');
  const [steps, setSteps] = useState<StepDraft[]>(() => [newStep(0)]);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const progress = useInstallProgress();
  const [invalidField, setInvalidField] = useState<string | undefined>(undefined);
  /** The field at fault is marked, and says where its reason is. */
  const marked = (id: string) =>
    invalidField === id ? { 'aria-invalid': 'true' as const, 'aria-describedby': 'workflow-error' } : { 'aria-invalid': undefined };
  /** Said to screen readers after a step moves: where it now stands. */
  const [moved, setMoved] = useState('');
  const errorLine = useRef<HTMLParagraphElement>(null);

  // Focus follows a moved, added or remaining step, once the list is drawn again: the id of what gets it.
  const [focusNext, setFocusNext] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (!focusNext) return;
    document.getElementById(focusNext)?.focus();
    setFocusNext(undefined);
  }, [focusNext]);

  const change = (key: number, patch: Partial<StepDraft>) => setSteps((all) => all.map((s) => (s.key === key ? { ...s, ...patch } : s)));
  const move = (index: number, by: -1 | 1) => {
    setSteps((all) => {
      const next = [...all];
      [next[index], next[index + by]] = [next[index + by]!, next[index]!];
      return next;
    });
    // The same button again, unless the step reached the end it moved toward, where that one is off: then the other.
    const to = index + by;
    const way = by < 0 ? (to === 0 ? 'down' : 'up') : to === steps.length - 1 ? 'up' : 'down';
    setFocusNext(`step-${way}-${steps[index]!.key}`);
    setMoved(`${steps[index]!.name || 'The step'} is now step ${index + by + 1} of ${steps.length}.`);
  };
  const remove = (index: number) => {
    const stays = steps.filter((_, i) => i !== index);
    setSteps(stays);
    setFocusNext(`step-name-${stays[Math.min(index, stays.length - 1)]!.key}`);
  };
  const add = () => {
    const step = newStep(steps.length);
    setSteps((all) => [...all, step]);
    setFocusNext(`step-name-${step.key}`);
  };

  /** The request body, or a message naming what to fix and the id of the field to fix it in. */
  const body = (): { body?: Record<string, unknown>; problem?: string; field?: string } => {
    if (!name.trim()) return { problem: 'The workflow needs a name.', field: 'workflow-name' };
    const built: Record<string, unknown>[] = [];
    for (const [i, step] of steps.entries()) {
      const label = step.name.trim() || `step ${i + 1}`;
      if (!step.name.trim()) return { problem: `Step ${i + 1} needs a name.`, field: `step-name-${step.key}` };
      if (!step.text.trim()) return { problem: `Step ${label} needs its ${ORIGIN_LABELS[step.origin].toLowerCase()}.`, field: `step-text-${step.key}` };
      const entry: Record<string, unknown> =
        step.origin === 'code' ? { name: step.name.trim(), component_code: step.text } : { name: step.name.trim(), [step.origin]: step.text.trim() };
      if (step.props.trim()) {
        try {
          entry.configured_props = JSON.parse(step.props);
        } catch {
          return { problem: `The configured props of step ${label} are not valid JSON.`, field: `step-props-${step.key}` };
        }
        // The server refused an array or a bare value as "invalid body: steps.0.configured_props must be object".
        const props = entry.configured_props;
        if (typeof props !== 'object' || props === null || Array.isArray(props)) {
          return { problem: `The configured props of step ${label} must be a JSON object: { "prop": value, … }.`, field: `step-props-${step.key}` };
        }
      }
      built.push(entry);
    }
    const triggers: Record<TriggerKind, unknown> = {
      none: null,
      http: { type: 'http', custom_response: customResponse },
      interval: { type: 'timer', interval_seconds: Number(intervalSeconds) },
      // No time zone given: the server's default (UTC), rather than an empty name it refuses.
      cron: { type: 'timer', cron: cron.trim(), ...(timezone.trim() && { timezone: timezone.trim() }) },
      source: { type: 'source', source_id: sourceId.trim(), event_name: eventName.trim() },
    };
    if (trigger === 'interval' && !(Number.isSafeInteger(Number(intervalSeconds)) && Number(intervalSeconds) >= minTimerInterval())) {
      return { problem: `The timer needs an interval of at least ${minTimerIntervalText()}.`, field: 'workflow-interval' };
    }
    if (trigger === 'source' && !sourceId.trim()) return { problem: 'Choose the source whose events start the workflow.', field: 'workflow-source' };
    return { body: { name: name.trim(), trigger: triggers[trigger], steps: built, timeout_seconds: Number(timeoutSeconds) } };
  };

  const save = async (event: Event) => {
    event.preventDefault();
    // The button stays focusable while a save runs (aria-disabled), so a second press is ignored here.
    if (busy) return;
    const { body: request, problem, field } = body();
    setInvalidField(field);
    if (problem || !request) {
      setError(problem);
      (field ? document.getElementById(field) : errorLine.current)?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    progress.start();
    try {
      const answer = await saveWithProgress<{ data: Workflow }>('POST', '/workflows', request, progress.onStep);
      notify({ kind: 'ok', text: `Created ${answer.data.name}.` });
      navigate('workflows', answer.data.id);
    } catch (failure) {
      setError(describeErrorWithDetails(failure));
      // A 400 naming a field of the form (the name, the timeout) marks it and takes the focus; else the reason does.
      const named = failure instanceof ApiError ? failure.details.map((detail) => SERVER_FIELDS[detail.field ?? '']).find(Boolean) : undefined;
      setInvalidField(named);
      (named ? document.getElementById(named) : errorLine.current)?.focus();
    } finally {
      setBusy(false);
      progress.done();
    }
  };

  return (
    <section aria-labelledby="workflow-create-title">
      <p class="crumbs">
        <a href={href('workflows')}>Workflows</a> /
      </p>
      <h1 id="workflow-create-title">New workflow</h1>
      {/* The field at fault edited, its error goes: it was about the value it held. */}
      <form
        onSubmit={save}
        class="panel"
        noValidate
        onInput={(e) => {
          if (invalidField && (e.target as HTMLElement).id === invalidField) {
            setInvalidField(undefined);
            setError(undefined);
          }
        }}
      >
        <div class="field">
          <label for="workflow-name">Workflow name</label>
          <input id="workflow-name" value={name} required {...marked('workflow-name')} onInput={(e) => setName(e.currentTarget.value)} />
        </div>

        <fieldset>
          <legend>Trigger</legend>
          <div class="field">
            <label for="workflow-trigger">Starts on</label>
            <select id="workflow-trigger" value={trigger} onChange={(e) => setTrigger(e.currentTarget.value as TriggerKind)}>
              <option value="none">Manual runs and subscriptions only</option>
              <option value="http">HTTP requests to its endpoint</option>
              <option value="interval">A timer, every so many seconds</option>
              <option value="cron">A timer, on a cron schedule</option>
              <option value="source">Events of a source</option>
            </select>
          </div>
          {trigger === 'http' && (
            <div class="field checkbox">
              <input id="workflow-custom-response" type="checkbox" checked={customResponse} onChange={(e) => setCustomResponse(e.currentTarget.checked)} />
              <label for="workflow-custom-response">A step answers the request with $.respond()</label>
            </div>
          )}
          {trigger === 'interval' && (
            <div class="field">
              <label for="workflow-interval">Every (seconds)</label>
              <input
                id="workflow-interval"
                type="number"
                min={minTimerInterval()}
                aria-describedby="workflow-interval-min"
                {...marked('workflow-interval')}
                value={intervalSeconds}
                onInput={(e) => setIntervalSeconds(e.currentTarget.value)}
              />
              <p id="workflow-interval-min" class="hint">
                At least {minTimerIntervalText()}: the server refuses shorter intervals.
              </p>
            </div>
          )}
          {trigger === 'cron' && (
            <div class="inline">
              <label for="workflow-cron">Cron</label>
              <input id="workflow-cron" spellcheck={false} value={cron} onInput={(e) => setCron(e.currentTarget.value)} />
              <label for="workflow-timezone">Time zone</label>
              <input id="workflow-timezone" spellcheck={false} value={timezone} onInput={(e) => setTimezone(e.currentTarget.value)} />
            </div>
          )}
          {trigger === 'source' && (
            <div class="inline">
              <label for="workflow-source">Source</label>
              <input
                id="workflow-source"
                {...marked('workflow-source')}
                list="workflow-sources"
                spellcheck={false}
                value={sourceId}
                placeholder="dc_…"
                onInput={(e) => setSourceId(e.currentTarget.value)}
              />
              <datalist id="workflow-sources">
                {(sources.data ?? []).map((source) => (
                  <option key={source.id} value={source.id}>
                    {source.name}
                  </option>
                ))}
              </datalist>
              <label for="workflow-event-name">Stream</label>
              <input id="workflow-event-name" spellcheck={false} value={eventName} placeholder="default" onInput={(e) => setEventName(e.currentTarget.value)} />
            </div>
          )}
        </fieldset>

        <ol class="steps-edit">
          {steps.map((step, index) => (
            <li key={step.key} aria-label={`Step ${index + 1}`}>
              <fieldset>
                <legend>Step {index + 1}</legend>
                <div class="inline">
                  <label for={`step-name-${step.key}`}>Step name</label>
                  <input
                    id={`step-name-${step.key}`}
                    {...marked(`step-name-${step.key}`)}
                    spellcheck={false}
                    value={step.name}
                    onInput={(e) => change(step.key, { name: e.currentTarget.value })}
                  />
                  <label for={`step-origin-${step.key}`}>From</label>
                  <select
                    id={`step-origin-${step.key}`}
                    value={step.origin}
                    onChange={(e) =>
                      change(step.key, { origin: e.currentTarget.value as StepOrigin, text: e.currentTarget.value === 'code' ? STARTER_STEP : '' })
                    }
                  >
                    {Object.entries(ORIGIN_LABELS).map(([value, label]) => (
                      <option key={value} value={value}>
                        {label}
                      </option>
                    ))}
                  </select>
                </div>
                <div class="field">
                  <label for={`step-text-${step.key}`}>{ORIGIN_LABELS[step.origin]}</label>
                  {step.origin === 'code' ? (
                    <textarea
                      id={`step-text-${step.key}`}
                      {...marked(`step-text-${step.key}`)}
                      class="code"
                      rows={8}
                      spellcheck={false}
                      value={step.text}
                      onInput={(e) => change(step.key, { text: e.currentTarget.value })}
                    />
                  ) : (
                    <input
                      id={`step-text-${step.key}`}
                      {...marked(`step-text-${step.key}`)}
                      spellcheck={false}
                      placeholder={step.origin === 'component_id' ? 'sc_…' : 'app-component-key'}
                      value={step.text}
                      onInput={(e) => change(step.key, { text: e.currentTarget.value })}
                    />
                  )}
                </div>
                <div class="field">
                  <label for={`step-props-${step.key}`}>Configured props (JSON, optional)</label>
                  <textarea
                    id={`step-props-${step.key}`}
                    {...marked(`step-props-${step.key}`)}
                    class="code short"
                    rows={2}
                    spellcheck={false}
                    placeholder='{ "a": "{{ steps.trigger.event.body.n }}" }'
                    value={step.props}
                    onInput={(e) => change(step.key, { props: e.currentTarget.value })}
                  />
                </div>
                <div class="inline">
                  <button
                    type="button"
                    id={`step-up-${step.key}`}
                    aria-label={`Move up: step ${index + 1}${step.name ? `, ${step.name}` : ''}`}
                    disabled={index === 0}
                    onClick={() => move(index, -1)}
                  >
                    Move up
                  </button>
                  <button
                    type="button"
                    id={`step-down-${step.key}`}
                    aria-label={`Move down: step ${index + 1}${step.name ? `, ${step.name}` : ''}`}
                    disabled={index === steps.length - 1}
                    onClick={() => move(index, 1)}
                  >
                    Move down
                  </button>
                  <button type="button" disabled={steps.length === 1} onClick={() => remove(index)}>
                    Remove step {index + 1}
                  </button>
                </div>
              </fieldset>
            </li>
          ))}
        </ol>
        <p class="sr-only" aria-live="polite">
          {moved}
        </p>
        <p>
          <button type="button" onClick={add}>
            Add a step
          </button>
        </p>

        <div class="field">
          <label for="workflow-timeout">Run timeout (seconds, at most 900)</label>
          <input
            id="workflow-timeout"
            {...marked('workflow-timeout')}
            type="number"
            min={1}
            max={900}
            value={timeoutSeconds}
            onInput={(e) => setTimeoutSeconds(e.currentTarget.value)}
          />
        </div>

        {/* Always there, so that a message put in it is announced; the field at fault has the focus. */}
        <p id="workflow-error" class="field-error" ref={errorLine} tabIndex={-1} role="alert">
          {error ?? ''}
        </p>
        <InstallProgressView progress={progress} working="Installing the npm packages the steps' code imports, then saving…" />
        <button type="submit" aria-disabled={busy ? 'true' : undefined}>
          {busy ? 'Creating… (packages the code imports are installed first)' : 'Create workflow'}
        </button>
      </form>
    </section>
  );
}
