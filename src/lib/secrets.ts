// Encrypts secret prop values at rest with AES-256-GCM; the key comes from configuration or a key file.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { makeDataDir } from './data-dir.js';
import fs from 'node:fs';
import path from 'node:path';

const PREFIX = 'enc:v1:';
/** A sealed value that is not a string (a secret integer, object …): its JSON, sealed, to be parsed when opened. */
const JSON_PREFIX = 'encj:v1:';

/** A key file holds the 32 key bytes in base64, as `open` writes it; a given file that is missing is an error, never made. */
export function readKeyFile(file: string): Buffer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the secret key file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
  return key;
}

/**
 * A sealed value this key cannot open: it was sealed with another key (a data directory restored or moved without its
 * `secret.key`, or `--secret-key` changed). Retrying cannot help; the value must be entered again.
 */
export class UnreadableSecretError extends Error {
  override name = 'UnreadableSecretError';
}

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /**
   * A configured secret key is hashed to 32 bytes; without one, a random key is kept in `<dataDir>/secret.key`
   * (every node of a cluster must then be given the same TRIBUTARY_SECRET_KEY instead).
   */
  static open(secretKey: string | undefined, dataDir: string, keyFile?: string): SecretBox {
    if (secretKey) return new SecretBox(createHash('sha256').update(secretKey, 'utf8').digest());
    if (keyFile !== undefined) return new SecretBox(readKeyFile(path.resolve(keyFile)));
    const file = path.join(dataDir, 'secret.key');
    makeDataDir(dataDir);
    try {
      fs.writeFileSync(file, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    return new SecretBox(readKeyFile(file));
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** Any JSON value sealed: a string as `encrypt` does, another value as its JSON, which `unseal` gives back as it was. */
  seal(value: unknown): string {
    return typeof value === 'string' ? this.encrypt(value) : JSON_PREFIX + this.encrypt(JSON.stringify(value)).slice(PREFIX.length);
  }

  /** The value `seal` sealed. */
  unseal(sealed: string): unknown {
    if (!sealed.startsWith(JSON_PREFIX)) return this.decrypt(sealed);
    return JSON.parse(this.decrypt(PREFIX + sealed.slice(JSON_PREFIX.length)));
  }

  decrypt(sealed: string): string {
    if (!sealed.startsWith(PREFIX)) throw new Error('not an encrypted value');
    const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      throw new UnreadableSecretError(
        "this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), or it is damaged",
      );
    }
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && (value.startsWith(PREFIX) || value.startsWith(JSON_PREFIX));
  }
}
