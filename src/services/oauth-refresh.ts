// The OAuth 2.0 refresh_token grant (RFC 6749 §6): one form-encoded POST to a token URL, through the outbound guard.
import type { Response } from 'undici';
import { assertPublicLiteral, guardedFetch, OutboundBlockedError } from '../delivery/outbound.js';

/** What a refresh needs, from the connected account's credentials. */
export interface RefreshGrant {
  tokenUrl: string;
  refreshToken: string;
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** How the client authenticates: HTTP Basic (RFC 6749 §2.3.1, which every server must support) or body fields. */
  clientAuth: 'basic' | 'body';
}

export interface RefreshedTokens {
  accessToken: string;
  /** A new refresh token when the server rotates them. */
  refreshToken: string | undefined;
  /** Epoch seconds; undefined when the server did not say. */
  expiresAt: number | undefined;
}

export interface RefreshOptions {
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  nowMs: number;
}

/** Why a refresh failed, in words that hold no credential (never the token URL or what the server sent back). */
export class RefreshFailure extends Error {
  override name = 'RefreshFailure';
}

const MAX_ANSWER_BYTES = 64 * 1024;

/** `application/x-www-form-urlencoded` encoding of one value, as Basic credentials need it (RFC 6749 §2.3.1). */
function formEncoded(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1);
}

/** An OAuth error code (`invalid_grant`) is safe to repeat; free text the server wrote is not shown. */
function errorCodeOf(answer: Record<string, unknown>): string | undefined {
  const code = answer.error;
  return typeof code === 'string' && /^[\w.-]{1,64}$/.test(code) ? code : undefined;
}

async function readAnswer(response: Response): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += (chunk as Uint8Array).byteLength;
    if (size > MAX_ANSWER_BYTES) throw new RefreshFailure(`the token endpoint's answer is over ${MAX_ANSWER_BYTES / 1024} KiB`);
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  const text = Buffer.concat(chunks).toString('utf8');
  // JSON as RFC 6749 says; some servers (GitHub without an Accept header) answer form-encoded.
  if ((response.headers.get('content-type') ?? '').includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Exchanges the refresh token for a new access token; throws RefreshFailure with the reason. */
export async function refreshAccessToken(grant: RefreshGrant, options: RefreshOptions): Promise<RefreshedTokens> {
  let url: URL;
  try {
    url = new URL(grant.tokenUrl);
    assertPublicLiteral(url, options.allowPrivateNetwork);
  } catch (error) {
    if (error instanceof OutboundBlockedError) throw new RefreshFailure('the token URL is a private address (see --allow-private-network)');
    throw new RefreshFailure('oauth_token_url is not a valid URL');
  }
  const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: grant.refreshToken });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (grant.clientAuth === 'basic' && grant.clientId !== undefined && grant.clientSecret !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${formEncoded(grant.clientId)}:${formEncoded(grant.clientSecret)}`).toString('base64')}`;
  } else {
    if (grant.clientId !== undefined) body.set('client_id', grant.clientId);
    if (grant.clientSecret !== undefined) body.set('client_secret', grant.clientSecret);
  }
  try {
    // Redirects are not followed: they would carry the refresh token and the client secret somewhere else.
    const request = { method: 'POST', headers, body: body.toString(), redirect: 'manual' } as const;
    const { response, answer } = await guardedFetch(url, request, options, async (response) => ({ response, answer: await readAnswer(response) }));
    if (response.status < 200 || response.status > 299) {
      const code = errorCodeOf(answer);
      throw new RefreshFailure(`the token endpoint answered ${response.status}${code ? ` (${code})` : ''}`);
    }
    if (typeof answer.access_token !== 'string' || answer.access_token === '') throw new RefreshFailure("the token endpoint's answer holds no access_token");
    const expiresIn = Number(answer.expires_in);
    return {
      accessToken: answer.access_token,
      refreshToken: typeof answer.refresh_token === 'string' && answer.refresh_token !== '' ? answer.refresh_token : undefined,
      expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? Math.floor(options.nowMs / 1000) + Math.floor(expiresIn) : undefined,
    };
  } catch (error) {
    if (error instanceof RefreshFailure) throw error;
    const cause = (error as { cause?: { code?: unknown } }).cause;
    if (cause instanceof OutboundBlockedError) throw new RefreshFailure('the token URL resolves to a private address (see --allow-private-network)');
    if ((error as Error).name === 'TimeoutError') throw new RefreshFailure(`the token endpoint did not answer within ${options.timeoutMs / 1000} s`);
    const code = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
    throw new RefreshFailure(`the token endpoint could not be reached${code}`);
  }
}
