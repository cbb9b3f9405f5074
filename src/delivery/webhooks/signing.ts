// Standard Webhooks signatures: the HMAC-SHA256 of "id.timestamp.body", keyed by the bytes of a `whsec_` secret.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { bindings, type SecretBox } from '../../lib/secrets.js';

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed by the base64 part of the `whsec_` secret. */
export function signPayload(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  return signWith(signingKey(secret), messageId, timestampSeconds, body);
}

/** The HMAC key of a `whsec_` secret: the bytes its base64 part encodes. */
function signingKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
}

export function signWith(key: KeyObject, messageId: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * Signing keys by sealed secret and the webhook it was found on. Decrypting costs more than signing, so a webhook's
 * secret is decrypted once, not per attempt, and kept as a key only; a rotated secret is a new entry and the old one
 * ages out. The webhook is part of the entry: a sealed secret copied to another webhook is opened (and refused) there.
 */
export class SigningKeys {
  private readonly keys = new LRUCache<string, KeyObject>({ max: 1000 });

  constructor(private readonly secrets: SecretBox) {}

  of(webhook: { user_id: string; webhook_id: string; secret: string }): KeyObject {
    const entry = `${webhook.user_id}\0${webhook.webhook_id}\0${webhook.secret}`;
    let key = this.keys.get(entry);
    if (key === undefined) {
      key = signingKey(this.secrets.decrypt(webhook.secret, bindings.webhookSecret(webhook.user_id, webhook.webhook_id)));
      this.keys.set(entry, key);
    }
    return key;
  }
}
