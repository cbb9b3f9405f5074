// --secret-key-file: the key file of a data directory, given by path, opens what was sealed with it; wrong use stops the start.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bindings, SecretBox } from '../../src/lib/secrets.js';

const BINDING = bindings.prop('u_key_file', 'token');
import { client } from '../helpers/client.js';
import { BIN, createAccount, killHard } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';

const run = promisify(execFile);
const failed = (args: string[]) => run(process.execPath, [BIN, ...args]).catch((e: { code: number; stderr: string }) => e);

describe('--secret-key-file', () => {
  it('opens values sealed with the data directory key file; the same text as --secret-key does not', () => {
    const dataDir = tempDir();
    const sealed = SecretBox.open(undefined, dataDir).encrypt('s3cret', BINDING);
    const keyFile = path.join(dataDir, 'secret.key');
    expect(SecretBox.open(undefined, tempDir(), keyFile).decrypt(sealed, BINDING)).toBe('s3cret');
    expect(() => SecretBox.open(fs.readFileSync(keyFile, 'utf8'), tempDir()).decrypt(sealed, BINDING)).toThrow();
  });

  it('never makes a missing key file, and refuses one that holds no key', () => {
    const missing = path.join(tempDir(), 'nothing.key');
    expect(() => SecretBox.open(undefined, tempDir(), missing)).toThrow(`cannot read the secret key file ${missing}: ENOENT`);
    expect(fs.existsSync(missing)).toBe(false);
    const bad = path.join(tempDir(), 'bad.key');
    fs.writeFileSync(bad, 'short');
    expect(() => SecretBox.open(undefined, tempDir(), bad)).toThrow('does not hold a 32-byte base64 key');
  });

  it('stops serve when given with --secret-key, with exit code 2', async () => {
    const error = await failed(['serve', '--port', '0', '--data-dir', tempDir(), '--secret-key', 'x', '--secret-key-file', '/tmp/k']);
    expect(error).toMatchObject({ code: 2 });
    expect((error as { stderr: string }).stderr).toContain('--secret-key and --secret-key-file both name the key that seals secrets: set one of them');
  });

  it('stops serve with exit code 2 when the file cannot be read', async () => {
    const missing = path.join(tempDir(), 'nothing.key');
    const error = await failed(['serve', '--port', '0', '--data-dir', tempDir(), '--secret-key-file', missing]);
    expect(error).toMatchObject({ code: 2 });
    expect((error as { stderr: string }).stderr).toContain(`--secret-key-file (TRIBUTARY_SECRET_KEY_FILE): cannot read the secret key file ${missing}: ENOENT`);
  });

  it("says at start, once, when its key does not open the database's secrets (a node given another key)", async () => {
    const dataDir = tempDir();
    const storage = ['--data-dir', dataDir];
    const key = await createAccount(storage, 'ada');
    /** Starts serve with this secret key; resolves with its URL, its output so far, and the process. */
    const start = (secretKey: string) => {
      const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...storage, '--allow-private-network', '--secret-key', secretKey], {
        env: { PATH: process.env.PATH ?? '' },
      });
      let output = '';
      return new Promise<{ url: string; output: () => string; child: typeof child }>((resolve, reject) => {
        const listen = (chunk: Buffer) => {
          output += chunk.toString();
          const match = /listening at (http:\/\/\S+) /.exec(output);
          if (match) resolve({ url: match[1]!, output: () => output, child });
        };
        child.stdout.on('data', listen);
        child.stderr.on('data', listen);
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
      });
    };
    const first = await start('the cluster key');
    try {
      expect((await client(first.url, key).post(`/v1/webhooks?url=${encodeURIComponent('http://127.0.0.1:9/hook')}`)).status).toBe(200);
      expect(first.output()).not.toContain('does not open the secrets');
    } finally {
      await killHard(first.child);
    }
    const other = await start('another key');
    try {
      expect(other.output().match(/does not open the secrets in the database/g)).toHaveLength(1);
      expect(other.output()).toContain('give every node the same --secret-key or --secret-key-file');
    } finally {
      await killHard(other.child);
    }
    const again = await start('the cluster key');
    try {
      expect(again.output()).not.toContain('does not open the secrets');
    } finally {
      await killHard(again.child);
    }
  });
});
