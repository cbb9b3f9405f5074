// A local HTTPS mock of the few GitLab REST API v4 calls the GitLab app's polling sources make, recording every request.
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface MockProject {
  id: number;
  name: string;
  path_with_namespace: string;
  created_at: string;
}

export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  status: number;
}

/**
 * `GET /api/v4/projects` as GitLab answers it for `owned=true`: newest first, `id_after` keeping projects with a greater
 * id, `per_page` (20 by default) and `page`. A request without `Authorization: Bearer <token>` of the current token is
 * answered 401 `{"message":"401 Unauthorized"}`, as GitLab does; any other path is a 404.
 */
export async function startGitlabMock(tls: { cert: string; key: string }, token: string) {
  const projects: MockProject[] = [];
  const requests: SeenRequest[] = [];
  const state = { token };
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const answer = (status: number, body: unknown) => {
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        authorization: req.headers.authorization,
        status,
      });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${state.token}`) return answer(401, { message: '401 Unauthorized' });
    if (req.method !== 'GET' || url.pathname !== '/api/v4/projects') return answer(404, { message: '404 Not Found' });
    const after = Number(url.searchParams.get('id_after') ?? 0);
    const perPage = Number(url.searchParams.get('per_page') ?? 20);
    const page = Number(url.searchParams.get('page') ?? 1);
    const newestFirst = projects.filter((p) => p.id > after).sort((a, b) => b.id - a.id);
    answer(200, newestFirst.slice((page - 1) * perPage, page * perPage));
  });
  // A client that does not trust the certificate ends the handshake with an alert (`unknown ca`) before any request.
  const refusedHandshakes: string[] = [];
  server.on('tlsClientError', (error) => refusedHandshakes.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    /** What the app's `$auth.base_api_url` names: a host and port, the app adding `https://` and `/api/v4`. */
    host: `127.0.0.1:${port}`,
    requests,
    refusedHandshakes,
    /** Adds a project created now, with the next id. */
    addProject(name: string): MockProject {
      const id = (projects.at(-1)?.id ?? 100) + 1;
      const project = { id, name, path_with_namespace: `ada/${name}`, created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, id)).toISOString() };
      projects.push(project);
      return project;
    },
    /** The token the mock accepts from now on: the old one gets a 401. */
    acceptOnly(next: string) {
      state.token = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
