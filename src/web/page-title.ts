// The document's title for the page the URL names, so that the browser's tab, its history (the back button's list)
// and a screen reader's announcement of a new page tell the pages apart: every page was titled "Tributary".

const SECTION_TITLES: Record<string, [list: string, one: string]> = {
  sources: ['Sources', 'Source'],
  workflows: ['Workflows', 'Workflow'],
  webhooks: ['Webhooks', 'Webhook'],
  subscriptions: ['Subscriptions', 'Subscriptions'],
  'data-stores': ['Data stores', 'Data store'],
  components: ['Components', 'Component'],
  'connected-accounts': ['Connected accounts', 'Connected account'],
  account: ['Account', 'Account'],
};

/** `route` as currentRoute() gives it; `signedIn` false: the sign-in page, whatever the URL names. */
export function pageTitle(route: string[], signedIn: boolean): string {
  if (!signedIn) return 'Sign in — Tributary';
  const [section = 'sources', id, sub, subId] = route;
  const titles = SECTION_TITLES[section];
  if (!titles) return 'Not found — Tributary';
  const [list, one] = titles;
  if (id === undefined || section === 'subscriptions' || section === 'account') return `${list} — Tributary`;
  if (id === 'new' && (section === 'sources' || section === 'workflows')) return `New ${one.toLowerCase()} — Tributary`;
  if (section === 'workflows' && sub !== undefined) return `Run ${sub} — ${one} ${id} — Tributary`;
  if (section === 'sources' && sub === 'events' && subId !== undefined) return `Event ${subId} — ${one} ${id} — Tributary`;
  return `${one} ${id} — Tributary`;
}
