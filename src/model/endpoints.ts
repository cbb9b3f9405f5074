// Where the HTTP endpoints of sources and workflows live: `<public URL>/e/<endpoint id>`.

/** An endpoint's address, as the API shows it (`endpoint_url`); `publicUrl` comes without a trailing slash (config.ts). */
export function endpointUrl(publicUrl: string, endpointId: string): string {
  return `${publicUrl}/e/${endpointId}`;
}

/** The path every endpoint's path starts with: the public URL's own (a proxy may serve Tributary under one), then `/e/`. */
export function endpointPathPrefix(publicUrl: string): string {
  return `${new URL(publicUrl).pathname.replace(/\/+$/, '')}/e/`;
}
