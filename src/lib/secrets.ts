// Encrypts secret prop values at rest with AES-256-GCM; the key comes from configuration or a key file.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { makeDataDir } from './data-dir.js';
import fs from 'node:fs';
import path from 'node:path';

/** Sealed by an earlier version: opened under any binding, and sealed again as v2 when next written. */
const V1 = 'enc:v1:';
/** Sealed with its binding as the AES-GCM additional data: opened only under the binding it was sealed for. */
const V2 = 'enc:v2:';
/** A sealed value that is not a string (a secret integer, object …): its JSON, sealed, to be parsed when opened. */
const JSON_V1 = 'encj:v1:';
const JSON_V2 = 'encj:v2:';

/**
 * Where a sealed value belongs: the account that owns it and the field of that account it fills (`prop:token`,
 * `connected-account:apn_…`, …). A value copied in the database to another account's row, or another field, is not
 * opened there: it was sealed for this place only.
 */
export interface SecretBinding {
  accountId: string;
  field: string;
}

/** The additional data a v2 value is authenticated with; NUL-separated, which no id or prop name contains. */
function additionalData(binding: SecretBinding): Buffer {
  return Buffer.from(`tributary\0account:${binding.accountId}\0${binding.field}`, 'utf8');
}

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

  /** `plain` sealed for `binding` (always v2). */
  encrypt(plain: string, binding: SecretBinding): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(additionalData(binding));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return V2 + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** Any JSON value sealed: a string as `encrypt` does, another value as its JSON, which `unseal` gives back as it was. */
  seal(value: unknown, binding: SecretBinding): string {
    return typeof value === 'string' ? this.encrypt(value, binding) : JSON_V2 + this.encrypt(JSON.stringify(value), binding).slice(V2.length);
  }

  /** The value `seal` sealed. */
  unseal(sealed: string, binding: SecretBinding): unknown {
    if (sealed.startsWith(JSON_V2)) return JSON.parse(this.decrypt(V2 + sealed.slice(JSON_V2.length), binding));
    if (sealed.startsWith(JSON_V1)) return JSON.parse(this.decrypt(V1 + sealed.slice(JSON_V1.length), binding));
    return this.decrypt(sealed, binding);
  }

  /**
   * A v1 value sealed again for `binding` as v2, so that a value kept across a write ends up bound; a v2 value, or
   * one this key cannot open (its run or use says so, as before), is returned as it is.
   */
  rebind(sealed: string, binding: SecretBinding): string {
    if (!sealed.startsWith(V1) && !sealed.startsWith(JSON_V1)) return sealed;
    try {
      return this.seal(this.unseal(sealed, binding), binding);
    } catch (error) {
      if (error instanceof UnreadableSecretError) return sealed;
      throw error;
    }
  }

  /** The text `encrypt` sealed; a v2 value only under the binding it was sealed for. */
  decrypt(sealed: string, binding: SecretBinding): string {
    const v2 = sealed.startsWith(V2);
    if (!v2 && !sealed.startsWith(V1)) throw new Error('not an encrypted value');
    const raw = Buffer.from(sealed.slice(V1.length), 'base64');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      // A v1 value predates bindings: it is opened wherever it is found, and rebound when next written.
      if (v2) decipher.setAAD(additionalData(binding));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      throw new UnreadableSecretError(
        v2
          ? "this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), for another account or field (copied there in the database?), or it is damaged"
          : "this server's secret key does not open it: it was sealed with another key (restored without its secret.key?), or it is damaged",
      );
    }
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && [V1, V2, JSON_V1, JSON_V2].some((prefix) => value.startsWith(prefix));
  }
}

/** The binding of each kind of sealed value: what it is sealed for, and must be opened for. */
export const bindings = {
  /**
   * A secret prop of a source or workflow step: bound to the account and the prop's name, not the source or step,
   * so that a value kept by an update, a step's copy or a prop turned plain opens where it legitimately moves.
   */
  prop: (accountId: string, name: string): SecretBinding => ({ accountId, field: `prop:${name}` }),
  connectedAccount: (accountId: string, connectedAccountId: string): SecretBinding => ({ accountId, field: `connected-account:${connectedAccountId}` }),
  webhookSecret: (accountId: string, webhookId: string): SecretBinding => ({ accountId, field: `webhook:${webhookId}:secret` }),
  send: (accountId: string, workflowId: string): SecretBinding => ({ accountId, field: `workflow:${workflowId}:send` }),
};

/** How validated props are sealed for storing: a value given, or a stored one kept (rebound when it is v1). */
export interface PropSealer {
  seal(value: unknown, prop: string): string;
  keep(sealed: string, prop: string): string;
}

/** The sealer of one account's props. */
export function propSealer(secrets: SecretBox, accountId: string): PropSealer {
  return {
    seal: (value, prop) => secrets.seal(value, bindings.prop(accountId, prop)),
    keep: (sealed, prop) => secrets.rebind(sealed, bindings.prop(accountId, prop)),
  };
}
