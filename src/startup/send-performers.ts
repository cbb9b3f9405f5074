// The performers of workflow steps' `$.send` outbox, built from the server's settings.
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import type { Performers } from '../delivery/sends/sender.js';
import { HttpPerformer } from '../delivery/sends/http.js';
import { EmailPerformer } from '../delivery/sends/email.js';
import { S3Performer } from '../delivery/sends/s3.js';

/** What carries out each `$.send` kind of the outbox; email and S3 only with their settings. Attempts time out as webhooks' do. */
export function sendPerformers(config: Config, clock: Clock): Performers {
  const timeoutMs = config.webhookTimeout * 1000;
  const { smtpUrl, s3AccessKeyId: accessKeyId, s3SecretAccessKey: secretAccessKey } = config;
  return {
    http: new HttpPerformer({ allowPrivateNetwork: config.allowPrivateNetwork, timeoutMs }, clock),
    email: smtpUrl ? new EmailPerformer({ smtpUrl, from: config.emailFrom, timeoutMs }) : undefined,
    s3:
      accessKeyId && secretAccessKey
        ? new S3Performer({
            endpoint: config.s3Endpoint,
            region: config.s3Region,
            accessKeyId,
            secretAccessKey,
            forcePathStyle: config.s3ForcePathStyle,
            timeoutMs,
          })
        : undefined,
  };
}
