// The console's frame: sign-in or the signed-in layout (navigation, sign-out) around the page the URL names.
import { useEffect, useRef, useState } from 'preact/hooks';
import { whenUnauthorized } from './api';
import { AccountPage } from './account';
import { ComponentPage, ComponentsList } from './components';
import { ConnectedAccountPage } from './connected-account';
import { ConnectedAccountsList } from './connected-accounts-list';
import { DataStorePage, DataStoresList } from './data-stores';
import { useFocusKeeper } from './focus-keeper';
import { type Notice, NoticeProvider } from './notices';
import { pageTitle } from './page-title';
import { href, useRoute } from './router';
import { clearKey, storedKey } from './session';
import { SignIn } from './sign-in';
import { SourceCreate } from './source-create';
import { SourceDetail } from './source-detail';
import { SourcesList } from './sources-list';
import { SubscriptionsPage } from './subscriptions';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhooksPage } from './webhooks';
import { WorkflowDetail } from './workflow-detail';
import { WorkflowCreate } from './workflow-create';
import { WorkflowsList } from './workflows-list';

const SECTIONS = [
  ['sources', 'Sources'],
  ['workflows', 'Workflows'],
  ['webhooks', 'Webhooks'],
  ['subscriptions', 'Subscriptions'],
  ['data-stores', 'Data stores'],
  ['components', 'Components'],
  ['connected-accounts', 'Connected accounts'],
  ['account', 'Account'],
] as const;

export function App() {
  const [signedIn, setSignedIn] = useState(() => storedKey() !== null);
  // Why the sign-in page shows: a refused key (an error) or the user's own sign-out (not one).
  const [message, setMessage] = useState<Notice | undefined>(undefined);
  const route = useRoute();
  useFocusKeeper();

  useEffect(() => {
    whenUnauthorized((text) => {
      setMessage({ kind: 'error', text });
      setSignedIn(false);
    });
  }, []);

  useEffect(() => {
    document.title = pageTitle(route, signedIn);
  }, [route, signedIn]);

  const section = route[0] ?? 'sources';
  const sections = useRef<HTMLUListElement>(null);
  // On a phone the sections scroll sideways: the current one (Account, the last) was past the edge, so the page did
  // not show where it was. Scrolled into the strip's view, not the page's: the page keeps its own scroll.
  useEffect(() => {
    const strip = sections.current;
    const current = strip?.querySelector('[aria-current="page"]');
    if (!strip || !current) return;
    const box = strip.getBoundingClientRect();
    const link = current.getBoundingClientRect();
    // Whole pixels, rounded up: a scroll offset is rounded, and a fraction short left the link a sliver past the edge.
    if (link.right > box.right) strip.scrollLeft += Math.ceil(link.right - box.right);
    else if (link.left < box.left) strip.scrollLeft -= Math.ceil(box.left - link.left);
  }, [section, signedIn]);

  if (!signedIn) {
    return (
      <SignIn
        message={message}
        onSignedIn={() => {
          setMessage(undefined);
          setSignedIn(true);
          // The sign-in form is gone: focus goes to the page's content, not back to the document's start.
          requestAnimationFrame(() => document.getElementById('main')?.focus());
        }}
      />
    );
  }

  const signOut = () => {
    clearKey();
    setMessage({ kind: 'ok', text: 'Signed out.' });
    setSignedIn(false);
  };

  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={href('sources')}>
          Tributary
        </a>
        <nav aria-label="Sections">
          <ul ref={sections}>
            {SECTIONS.map(([id, label]) => (
              <li key={id}>
                <a href={href(id)} aria-current={section === id ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="sign-out" onClick={signOut}>
          Sign out
        </button>
      </header>
      {/* Keyed by section: a message about one page does not follow the user to another. */}
      <NoticeProvider key={section}>
        <main id="main" tabIndex={-1}>
          <Page route={route} />
        </main>
      </NoticeProvider>
    </>
  );
}

function Page(props: { route: string[] }) {
  const [section = 'sources', id, sub, subId] = props.route;
  switch (section) {
    case 'sources':
      // `#/sources/new/<component id>`: the form with that saved component chosen (a component's Deploy as source).
      if (id === 'new') return <SourceCreate componentId={sub} key={sub ?? ''} />;
      // `#/sources/<id>/events/<event id>` opens that event on the source's page (a webhook's delivery links there).
      return id ? <SourceDetail id={id} eventId={sub === 'events' ? subId : undefined} key={id} /> : <SourcesList />;
    case 'workflows':
      if (id === 'new') return <WorkflowCreate />;
      return id ? <WorkflowDetail id={id} runId={sub} key={id} /> : <WorkflowsList />;
    case 'webhooks':
      return id ? <WebhookDeliveries id={id} key={id} /> : <WebhooksPage />;
    case 'subscriptions':
      return <SubscriptionsPage />;
    case 'data-stores':
      return id ? <DataStorePage id={id} key={id} /> : <DataStoresList />;
    case 'components':
      return id ? <ComponentPage id={id} key={id} /> : <ComponentsList />;
    case 'connected-accounts':
      return id ? <ConnectedAccountPage id={id} key={id} /> : <ConnectedAccountsList />;
    case 'account':
      return <AccountPage />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            There is no page <code>#{props.route.join('/')}</code>. <a href={href('sources')}>Go to sources</a>.
          </p>
        </section>
      );
  }
}
