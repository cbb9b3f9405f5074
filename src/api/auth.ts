// Bearer-key authentication for every /v1 route: resolves the key to an account or answers 401.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../model/errors.js';
import type { Account, UserService } from '../services/users.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated account; set by the auth hook on every /v1 route. */
    account: Account;
    /** The key the request presented (GET /users/me returns it for free-plan accounts). */
    apiKey: string;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** How many Authorization headers the request carries: Node keeps the first and drops the others from `headers`. */
function authorizationCount(rawHeaders: string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  return count;
}

export function readBearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw new ServiceError('unauthorized', 'missing Authorization header; send "Authorization: Bearer <api key>"');
  // A proxy in front may read the last of several where Node reads the first: the request would act as two accounts.
  const count = authorizationCount(request.raw.rawHeaders);
  if (count > 1) throw new ServiceError('unauthorized', `${count} Authorization headers; send one, "Authorization: Bearer <api key>"`);
  const match = BEARER.exec(header);
  if (!match) throw new ServiceError('unauthorized', 'malformed Authorization header; expected "Bearer <api key>"');
  return match[1]!;
}

export function installAuth(app: FastifyInstance, users: UserService): void {
  app.decorateRequest('account', null as unknown as Account);
  app.decorateRequest('apiKey', '');
  app.addHook('onRequest', async (request) => {
    const key = readBearerKey(request);
    const account = await users.authenticate(key);
    if (!account) throw new ServiceError('unauthorized', 'invalid API key');
    request.account = account;
    request.apiKey = key;
  });
}
