// Polls a JSON feed on a timer and emits each item once, remembering what it has seen in $.service.db.
module.exports = {
  key: 'json_feed-new-items',
  name: 'New JSON Feed Items',
  description: 'Poll a JSON Feed (https://jsonfeed.org) and emit each new item once.',
  version: '0.1.0',
  dedupe: 'unique',
  props: {
    db: '$.service.db',
    timer: {
      type: '$.interface.timer',
      default: {
        intervalSeconds: 900,
      },
    },
    feedUrl: {
      type: 'string',
      label: 'Feed URL',
      description: 'URL of a JSON Feed document',
    },
    maxItems: {
      type: 'integer',
      label: 'Max items per poll',
      optional: true,
      default: 20,
      min: 1,
      max: 100,
    },
  },
  methods: {
    async fetchItems() {
      const response = await fetch(this.feedUrl, { headers: { accept: 'application/feed+json, application/json' } });
      if (!response.ok) throw new Error(`${this.feedUrl} answered ${response.status}`);
      const feed = await response.json();
      return Array.isArray(feed.items) ? feed.items : [];
    },
  },
  hooks: {
    async deploy() {
      this.db.set('lastPolledAt', null);
    },
  },
  async run() {
    const items = (await this.fetchItems()).slice(0, this.maxItems ?? 20);
    for (const item of items) {
      const published = Date.parse(item.date_published ?? '') || Date.now();
      this.$emit(item, {
        id: item.id ?? item.url,
        summary: item.title ?? item.url ?? String(item.id),
        ts: published,
      });
    }
    this.db.set('lastPolledAt', Date.now());
  },
};
