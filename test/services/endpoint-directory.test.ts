// The endpoint cache: evicting a source forgets that source's endpoint and every endpoint cached as unknown (one may
// belong to a source created since on another node), and nothing else; a cluster signal evicts per changed source.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointDirectory } from '../../src/services/ingress.js';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

const HTTP_SOURCE = 'export default { name: "e", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };';

describe.each(DIALECTS)('EndpointDirectory on %s', (dialect) => {
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    key = (await server.createUser({ plan: 'paid' })).apiKey;
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const deploy = async () => {
    const deployed = await client(server.url, key).post('/v1/sources', { component_code: HTTP_SOURCE });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    const { id } = deployed.body.data as { id: string };
    const endpoint = new URL(deployed.body.data.configured_props.http.endpoint_url as string).pathname.split('/').pop()!;
    return { id, endpoint };
  };

  it("forgets the evicted source's endpoint and the unknown ones, and keeps the others", async () => {
    const directory = new EndpointDirectory(server.running.services.store);
    const [a, b] = [await deploy(), await deploy()];
    expect(await directory.resolve(a.endpoint)).toMatchObject({ sourceId: a.id, active: true, customResponse: false });
    expect(await directory.resolve(b.endpoint)).toMatchObject({ sourceId: b.id });
    expect(await directory.resolve('enotasourceyet')).toBeNull();

    // Deleted behind this directory's back (as on another node): still known until evicted.
    expect((await client(server.url, key).delete(`/v1/sources/${a.id}`)).status).toBe(204);
    expect(directory.known(a.endpoint)).toMatchObject({ sourceId: a.id });

    directory.evictSource(a.id);
    expect(directory.known(a.endpoint)).toBeUndefined();
    expect(directory.known('enotasourceyet')).toBeUndefined();
    expect(directory.known(b.endpoint)).toMatchObject({ sourceId: b.id });
    expect(await directory.resolve(a.endpoint)).toBeNull();

    directory.evictAll();
    expect(directory.known(b.endpoint)).toBeUndefined();
    expect(await directory.resolve(b.endpoint)).toMatchObject({ sourceId: b.id });
    directory.evictSource(b.id);
    expect(directory.known(b.endpoint)).toBeUndefined();
  });
});
