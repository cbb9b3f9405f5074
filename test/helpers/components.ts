// Component code used across tests, written as users write it.

/** A source that records each hook call in its db and logs it, so tests can see which hooks ran in which order. */
export const HOOKS_SOURCE = `
module.exports = {
  key: "test-hooks",
  name: "Hook Recorder",
  version: "0.0.1",
  props: {
    db: "$.service.db",
    label: { type: "string", optional: true, default: "none" },
    failIn: { type: "string", optional: true, default: "" },
  },
  hooks: {
    async deploy() { this.record("deploy"); },
    async activate() { this.record("activate"); },
    async deactivate() { this.record("deactivate"); },
  },
  methods: {
    record(hook) {
      if (this.failIn === hook) throw new Error("boom in " + hook);
      const calls = this.db.get("calls") || [];
      calls.push(hook + ":" + this.label);
      this.db.set("calls", calls);
      console.log("hook " + hook);
    },
  },
  async run(event) {
    this.$emit({ calls: this.db.get("calls") || [], event });
  },
};
`;

/** A source with one prop of every user-input kind, a timer and an HTTP interface. */
export const PROPS_SOURCE = `
export default {
  name: "Props Showcase",
  version: "1.0.0",
  props: {
    http: "$.interface.http",
    timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
    token: { type: "string", secret: true, label: "API token" },
    count: { type: "integer", min: 1, max: 10 },
    color: { type: "string", options: ["red", "green", { label: "Blue", value: "blue" }] },
    enabled: { type: "boolean", optional: true },
    tags: { type: "string[]", optional: true },
    extra: { type: "object", optional: true },
    greeting: { type: "string", optional: true, default: "hello" },
  },
  async run(event) {
    this.$emit({ token: this.token, count: this.count, greeting: this.greeting, endpoint: this.http.endpoint });
  },
};
`;

/** Emits its event, plus whatever `emits` the event asks for, with the source's dedupe strategy. */
export function emitterSource(dedupe?: 'unique' | 'greatest' | 'last'): string {
  return `
module.exports = {
  name: "Emitter",
  version: "0.0.1",
  ${dedupe ? `dedupe: "${dedupe}",` : ''}
  props: { db: "$.service.db" },
  async run(event) {
    const runs = (this.db.get("runs") || 0) + 1;
    this.db.set("runs", runs);
    console.log("run", runs);
    if (event && event.fail) throw new Error(event.fail);
    for (const e of (event && event.emits) || [{ event, meta: {} }]) this.$emit(e.event, e.meta);
  },
};
`;
}
