// Fixtures of the connected-accounts tests: components that read `$auth`, a local OAuth token endpoint, a file walk.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** Reads `$auth` in run, in the deploy and deactivate hooks, and through an app method. */
export const APP_SOURCE = `
module.exports = {
  name: "Auth Reader",
  version: "0.1.0",
  props: {
    db: "$.service.db",
    acme: {
      type: "app",
      app: "acme",
      methods: {
        authorization() { return "Bearer " + this.$auth.api_key; },
      },
    },
  },
  hooks: {
    async deploy() { this.db.set("seenAtDeploy", this.acme.$auth.api_key); },
    async deactivate() { this.db.set("seenAtDeactivate", this.acme.$auth.api_key); },
  },
  async run() {
    this.$emit({ run: this.acme.$auth.api_key, method: this.acme.authorization(), deploy: this.db.get("seenAtDeploy") });
  },
};
`;

/** Emits the access token it was given; with `needs` in the event, any other token fails as an HTTP 401 would. */
export const OAUTH_SOURCE = `
module.exports = {
  name: "OAuth Reader",
  version: "0.1.0",
  props: { acme: { type: "app", app: "acme" } },
  async run(event) {
    const token = this.acme.$auth.oauth_access_token;
    if (event && event.needs && token !== event.needs) {
      const error = new Error("Request failed with status code 401");
      error.code = "ERR_BAD_REQUEST";
      throw error;
    }
    this.$emit({ token });
  },
};
`;

export const AUTH_STEP = `
export default defineComponent({
  props: { acme: { type: "app", app: "acme" } },
  async run() { return this.acme.$auth.api_key ?? this.acme.$auth.oauth_access_token; },
});
`;

/** An app whose propDefinition's options() reads `$auth`, as the reference service's app files do. */
export const OPTIONS_SOURCE = `
const acme = {
  type: "app",
  app: "acme",
  propDefinitions: {
    repo: { type: "string", label: "Repo", async options() { return [this.$auth.site + "/alpha", this.$auth.site + "/beta"]; } },
  },
};
export default { name: "Repo Picker", version: "0.1.0", props: { acme, repo: { propDefinition: [acme, "repo"] } }, async run() {} };
`;

/** A distinctive secret, so that finding it anywhere it should not be is unambiguous. */
export const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;

export interface TokenRequest {
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: URLSearchParams;
}

/** A local OAuth token endpoint: `/token` hands out `new-<refresh token>`, `/fail` refuses with invalid_grant. */
export async function startTokenEndpoint() {
  const requests: TokenRequest[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = new URLSearchParams(text);
      requests.push({ path: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
      res.setHeader('content-type', 'application/json');
      if (req.url !== '/token') {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'the refresh token was revoked' }));
        return;
      }
      const refresh = body.get('refresh_token');
      res.end(JSON.stringify({ access_token: `new-${refresh}`, refresh_token: `${refresh}-rotated`, expires_in: 3600, token_type: 'bearer' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.isFile() ? [full] : [];
  });
}
