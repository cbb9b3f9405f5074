// Values sealed as an earlier version did (`enc:v1:`, no binding), with a data directory's key file, for tests of what such rows still do.
import { createCipheriv, randomBytes } from 'node:crypto';
import path from 'node:path';
import { readKeyFile } from '../../src/lib/secrets.js';

/** `value` sealed in the v1 format (a string as `enc:v1:`, any other JSON value as `encj:v1:`) with `<dataDir>/secret.key`. */
export function sealV1(dataDir: string, value: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', readKeyFile(path.join(dataDir, 'secret.key')), iv);
  const body = Buffer.concat([cipher.update(typeof value === 'string' ? value : JSON.stringify(value), 'utf8'), cipher.final()]);
  const prefix = typeof value === 'string' ? 'enc:v1:' : 'encj:v1:';
  return prefix + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}
