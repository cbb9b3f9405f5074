// Says at start when this node's secret key is not the one the database's secrets were sealed with.
import type { Logger } from 'pino';
import { bindings, SecretBox, UnreadableSecretError } from '../lib/secrets.js';
import type { Store } from '../store/database.js';
import { newestWebhookSecret } from '../store/webhooks.js';

/**
 * A node started without the cluster's key (no TRIBUTARY_SECRET_KEY: it made its own `secret.key`) serves, but every
 * secret prop, connected account and webhook signature then fails on that node alone. A warning, not a refusal: a
 * restore without its key is a documented way back (the values are entered again), and that server must start.
 */
export async function warnIfSecretKeyDiffers(store: Store, secrets: SecretBox, logger: Logger): Promise<void> {
  let sample: Awaited<ReturnType<typeof newestWebhookSecret>>;
  try {
    sample = await newestWebhookSecret(store.db);
  } catch {
    return; // The database is not answering: the start says so on its own.
  }
  if (!sample || !SecretBox.isSealed(sample.secret)) return;
  try {
    secrets.decrypt(sample.secret, bindings.webhookSecret(sample.user_id, sample.id));
  } catch (error) {
    if (!(error instanceof UnreadableSecretError)) throw error;
    logger.error(
      "this node's secret key does not open the secrets in the database (a webhook's signing secret was sealed with another key): " +
        'secret props, connected accounts and webhook signatures will fail on this node; give every node the same ' +
        '--secret-key or --secret-key-file (TRIBUTARY_SECRET_KEY), or, after a restore without its key, enter those values again',
    );
  }
}
