// The components pages: the account's saved components, and one component's facts, props and code.
import { get } from './api';
import { CopyButton } from './copy-button';
import { formatTime } from './format';
import { LoadError } from './load-error';
import { href } from './router';
import type { PropDescriptor, SavedComponent } from './types';
import { useLoad } from './use-load';
import { usePages } from './use-pages';
import { NameCell, PagedTable, Table } from './table';

const PAGE = 50;

export function ComponentsList() {
  // The list is for finding a component: its code, which may be long, is read on its own page only.
  const pages = usePages<SavedComponent>('/users/me/components', PAGE, { exclude: 'code' });
  return (
    <section aria-labelledby="components-title">
      <h1 id="components-title">Components</h1>
      <p class="hint">The account's saved components, newest first: each save of code is one, a source's and a workflow step's too.</p>
      <PagedTable
        pages={pages}
        columns={['Name', 'Version', 'Id', 'Created', 'Updated']}
        row={(component) => (
          <tr key={component.id}>
            <NameCell href={href('components', component.id)} name={component.name} />
            <td>{component.version}</td>
            <td>
              <code>{component.id}</code>
            </td>
            <td>{formatTime(component.created_at * 1000)}</td>
            <td>{formatTime(component.updated_at * 1000)}</td>
          </tr>
        )}
        // Nothing on this page saves one: the empty page says what does.
        empty={
          <>
            No components yet. A component is saved from its code with <code>POST /v1/components</code> or <code>tributary deploy</code>, or by deploying pasted
            code from <a href={href('sources', 'new')}>New source</a>.
          </>
        }
      />
    </section>
  );
}

/** One component, by the id (or the key in its code: the API takes either) in the address. */
export function ComponentPage(props: { id: string }) {
  const loaded = useLoad(() => get<{ data: SavedComponent }>(`/components/${encodeURIComponent(props.id)}`), [props.id]);
  const component = loaded.data?.data;
  const crumbs = (
    <p class="crumbs">
      <a href={href('components')}>Components</a> /
    </p>
  );
  // No such component (another account's, a mistyped address): its 404 and nothing else, no empty props or code.
  if (loaded.missing || !component) {
    return (
      <section aria-labelledby="component-title">
        {crumbs}
        <h1 id="component-title" class="wrap">
          Component {props.id}
        </h1>
        <LoadError loads={[loaded]} />
      </section>
    );
  }
  const shown = component.configurable_props.filter((prop) => !prop.hidden);
  return (
    <section aria-labelledby="component-title">
      {crumbs}
      <h1 id="component-title" class="wrap">
        {component.name}
      </h1>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{component.id}</code>
        </dd>
        <dt>Version</dt>
        <dd>{component.version}</dd>
        <dt>Code hash</dt>
        <dd>
          <code>{component.code_hash}</code>
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(component.created_at * 1000)}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(component.updated_at * 1000)}</dd>
      </dl>
      <LoadError loads={[loaded]} />
      <div class="toolbar">
        {/* The new-source form with this component chosen and its props loaded: no id to copy across. */}
        <a class="button" href={href('sources', 'new', component.id)}>
          Deploy as source
        </a>
      </div>
      <h2 id="component-props">Props</h2>
      {shown.length === 0 ? <p class="muted">This component declares no props.</p> : <PropsTable props={shown} />}
      <h2 id="component-code">Code</h2>
      <CopyButton value={component.code ?? ''} label="Copy the code" />
      <pre class="component-code">
        <code>{component.code}</code>
      </pre>
    </section>
  );
}

/** The props a deploy configures, as the code declares them (those `additionalProps()` adds depend on the values). */
function PropsTable(props: { props: PropDescriptor[] }) {
  return (
    <Table
      labelledBy="component-props"
      columns={['Name', 'Type', 'Required', 'Default', 'About']}
      items={props.props}
      row={(prop) => (
        <tr key={prop.name}>
          <th scope="row">
            <code>{prop.name}</code>
          </th>
          <td>
            {prop.type}
            {prop.secret && <span class="muted"> (secret)</span>}
          </td>
          {/* An alert is a note to whoever configures it: it takes no value. */}
          <td>{prop.type === 'alert' ? '' : prop.optional ? 'optional' : 'required'}</td>
          <td>{prop.default === undefined ? '' : <code>{JSON.stringify(prop.default)}</code>}</td>
          <td class="about">{[prop.label, prop.description ?? prop.content].filter(Boolean).join(': ')}</td>
        </tr>
      )}
    />
  );
}
