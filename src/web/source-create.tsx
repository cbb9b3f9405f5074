// Deploying a source: from pasted code, a registry key or a saved component, then a form generated from the component's props.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeErrorWithDetails, get, post } from './api';
import { InstallProgressView, useInstallProgress } from './install-progress';
import { useNotify } from './notices';
import { sendChecked, useFormErrors } from './field-errors';
import { collectValues, initialValues, PropFields, type RawValues } from './prop-form';
import { errorsFromServer } from './prop-refusal';
import { PropListStatus, usePropList } from './prop-list';
import { href, navigate } from './router';
import { saveWithProgress } from './save-stream';
import type { Component, Source } from './types';

// The components `registry/` publishes at start; any other key of the registry can be typed in.
const REGISTRY_SUGGESTIONS = ['http-new-requests', 'schedule-custom-interval', 'json_feed-new-items'];

type Origin = 'code' | 'registry' | 'saved';
const FIELD_OF: Record<Origin, string> = { code: 'component-code', registry: 'registry-key', saved: 'saved-component' };

/** `componentId`: a saved component to deploy (a component page's Deploy as source), chosen and its props loaded at once. */
export function SourceCreate(props: { componentId?: string | undefined }) {
  const notify = useNotify();
  const [origin, setOrigin] = useState<Origin>(props.componentId ? 'saved' : 'code');
  const [code, setCode] = useState('');
  const [registryKey, setRegistryKey] = useState('');
  const [savedId, setSavedId] = useState(props.componentId ?? '');
  const [component, setComponent] = useState<Component | undefined>(undefined);
  const [loadError, setLoadError] = useState<string | undefined>(undefined);
  const [name, setName] = useState('');
  /** The server's 400 about the source's name (longer than 200 characters), shown on that field. */
  const [nameError, setNameError] = useState<string | undefined>(undefined);
  const [raw, setRaw] = useState<RawValues>({});
  const errors = useFormErrors();
  // Which request runs: each button says its own (Deploy said nothing of Load props), and both ignore presses meanwhile.
  const [busy, setBusy] = useState<'loading' | 'deploying' | undefined>(undefined);
  const progress = useInstallProgress();
  const configureTitle = useRef<HTMLHeadingElement>(null);
  // Why the code or the key was refused is about that field: marked, pointing at the reason, which goes once it is edited.
  const pick = (from: Origin) => {
    setOrigin(from);
    setLoadError(undefined);
  };
  // A reason that is not about the field (no answer, a 5xx) leaves it unmarked: the same code works once the server does.
  const [loadErrorOnField, setLoadErrorOnField] = useState(false);
  const aboutSource = { 'aria-invalid': loadError && loadErrorOnField ? ('true' as const) : undefined, 'aria-describedby': 'component-error' };
  const propList = usePropList(component?.id ?? '', component?.configurable_props ?? [], raw, setRaw);
  // Once the props are loaded, keyboard and screen-reader users land on the form they now fill in.
  useEffect(() => {
    if (component) configureTitle.current?.focus();
  }, [component?.id]);

  const loadComponent = async (event?: Event) => {
    event?.preventDefault();
    if (busy) return;
    setBusy('loading');
    setLoadError(undefined);
    // Saving code installs the npm packages it imports first (a minute, for a large one): the progress route tells each.
    if (origin === 'code') progress.start();
    try {
      const answer =
        origin === 'code'
          ? await saveWithProgress<{ data: Component }>('POST', '/components', { component_code: code }, progress.onStep)
          : origin === 'registry'
            ? await get<{ data: Component }>(`/components/registry/${encodeURIComponent(registryKey.trim())}`)
            : await get<{ data: Component }>(`/components/${encodeURIComponent(savedId.trim())}`);
      setComponent(answer.data);
      setRaw(initialValues(answer.data.configurable_props));
      errors.show({}, undefined, '');
    } catch (failure) {
      setLoadError(describeErrorWithDetails(failure));
      const onField = failure instanceof ApiError && [400, 404, 422].includes(failure.status);
      setLoadErrorOnField(onField);
      // The field to fix has the keyboard, as in every form; a reason about no field leaves it on the button.
      if (onField) document.getElementById(FIELD_OF[origin])?.focus();
    } finally {
      setBusy(undefined);
      progress.done();
    }
  };

  // Opened for a saved component: its props are what the user came for, loaded without a press of Load props.
  useEffect(() => {
    if (props.componentId) loadComponent();
  }, []);

  const deploy = async (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const form = event.currentTarget as HTMLFormElement;
    if (!component || busy) return;
    const { values, errors: found } = collectValues(propList.props, raw);
    await sendChecked(
      form,
      errors,
      found,
      async () => {
        setBusy('deploying');
        try {
          const body: Record<string, unknown> = { component_id: component.id, configured_props: values };
          if (name.trim()) body.name = name.trim();
          const answer = await post<{ data: Source }>('/sources', body);
          notify({ kind: 'ok', text: `Deployed ${answer.data.name}.` });
          navigate('sources', answer.data.id);
        } finally {
          setBusy(undefined);
        }
      },
      (failure) => {
        // A 400 naming the body's `name` is about the Source name field, not a prop: shown there, which gets the focus.
        const aboutName = failure instanceof ApiError && failure.status === 400 ? failure.details.find((d) => d.field === 'name') : undefined;
        setNameError(aboutName ? `Source name ${aboutName.message ?? 'is invalid'}` : undefined);
        const onlyName = aboutName !== undefined && (failure as ApiError).details.length === 1;
        return onlyName ? { fields: {}, general: undefined } : errorsFromServer(failure, propList.props, values);
      },
    );
  };

  return (
    <section aria-labelledby="create-title">
      <p class="crumbs">
        <a href={href('sources')}>Sources</a> /
      </p>
      <h1 id="create-title">New source</h1>
      <form onSubmit={loadComponent} class="panel" noValidate>
        <fieldset>
          <legend>Component</legend>
          <div class="inline">
            <input type="radio" id="origin-code" name="origin" checked={origin === 'code'} onChange={() => pick('code')} />
            <label for="origin-code">Paste code</label>
            <input type="radio" id="origin-registry" name="origin" checked={origin === 'registry'} onChange={() => pick('registry')} />
            <label for="origin-registry">Registry component</label>
            <input type="radio" id="origin-saved" name="origin" checked={origin === 'saved'} onChange={() => pick('saved')} />
            <label for="origin-saved">Saved component</label>
          </div>
        </fieldset>
        {origin === 'code' ? (
          <div class="field">
            <label for="component-code">Component code</label>
            <textarea
              id="component-code"
              class="code"
              rows={12}
              spellcheck={false}
              value={code}
              {...aboutSource}
              onInput={(e) => {
                setCode(e.currentTarget.value);
                setLoadError(undefined);
              }}
            />
          </div>
        ) : origin === 'saved' ? (
          <div class="field">
            <label for="saved-component">Component id or key</label>
            <input
              id="saved-component"
              spellcheck={false}
              placeholder="sc_…"
              value={savedId}
              {...aboutSource}
              onInput={(e) => {
                setSavedId(e.currentTarget.value);
                setLoadError(undefined);
              }}
            />
            <p class="hint">
              One of the account's <a href={href('components')}>components</a>: its id, or the <code>key</code> in its code.
            </p>
          </div>
        ) : (
          <div class="field">
            <label for="registry-key">Registry key</label>
            <input
              id="registry-key"
              list="registry-keys"
              spellcheck={false}
              value={registryKey}
              {...aboutSource}
              onInput={(e) => {
                setRegistryKey(e.currentTarget.value);
                setLoadError(undefined);
              }}
            />
            <datalist id="registry-keys">
              {REGISTRY_SUGGESTIONS.map((key) => (
                <option key={key} value={key} />
              ))}
            </datalist>
          </div>
        )}
        <p id="component-error" class="field-error" role={loadError ? 'alert' : undefined}>
          {loadError ?? ''}
        </p>
        <InstallProgressView progress={progress} working="Saving the component: installing the npm packages its code imports…" />
        {/* While busy, aria-disabled rather than disabled: a disabled button loses the focus to the document, where a
            refusal left it (the next Tab started again from the top). */}
        <button type="submit" disabled={!{ code, registry: registryKey, saved: savedId }[origin].trim()} aria-disabled={busy ? 'true' : undefined}>
          {busy === 'loading' ? 'Loading props…' : 'Load props'}
        </button>
      </form>

      {component && (
        <form onSubmit={deploy} class="panel" noValidate aria-labelledby="configure-title">
          <h2 id="configure-title" ref={configureTitle} tabIndex={-1}>
            Configure {component.name} <span class="muted">{component.version}</span>
          </h2>
          <div class="field">
            <label for="source-name">Source name</label>
            <input
              id="source-name"
              value={name}
              placeholder="defaults to the component's name"
              aria-invalid={nameError ? 'true' : undefined}
              aria-describedby="source-name-error"
              onInput={(e) => {
                setName(e.currentTarget.value);
                setNameError(undefined);
              }}
            />
            <p id="source-name-error" class="field-error" role={nameError ? 'alert' : undefined}>
              {nameError ?? ''}
            </p>
          </div>
          <PropFields
            componentId={component.id}
            props={propList.props}
            raw={raw}
            onChange={setRaw}
            errors={{ ...propList.invalid, ...errors.fields }}
            onEdited={errors.edited}
            idPrefix="prop"
          />
          <PropListStatus list={propList} />
          <p class="field-error" role={errors.summary ? 'alert' : undefined}>
            {errors.summary ?? ''}
          </p>
          <button type="submit" aria-disabled={busy ? 'true' : undefined}>
            {busy === 'deploying' ? 'Deploying…' : 'Deploy'}
          </button>
        </form>
      )}
    </section>
  );
}
