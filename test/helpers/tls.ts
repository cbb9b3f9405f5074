// A certificate authority made for one test run with the openssl command, and a server certificate it signed for
// 127.0.0.1 and localhost: what a local HTTPS mock needs for a client that trusts only the CA to accept it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './server.js';

export interface TestCertificates {
  /** The folder holding the files below; remove it when done. */
  dir: string;
  /** The CA's certificate (PEM), readable by any user: workers may run as another one. */
  caFile: string;
  /** The server's certificate (signed by the CA) and its private key, PEM. */
  cert: string;
  key: string;
}

/** Whether the openssl command is on the PATH. */
export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// One file of extensions, given by name to each command, so that no option newer than LibreSSL's or OpenSSL 1.1's is needed.
const OPENSSL_CONFIG = `
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
authorityKeyIdentifier = keyid
`;

/** Makes a CA and a server certificate valid for ten years in a new temp folder. */
export function makeTestCertificates(): TestCertificates {
  const dir = tempDir('tributary-tls-');
  const file = (name: string) => path.join(dir, name);
  fs.writeFileSync(file('openssl.cnf'), OPENSSL_CONFIG);
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const common = ['-config', 'openssl.cnf', '-newkey', 'rsa:2048', '-nodes'];
  openssl(['req', '-x509', ...common, '-extensions', 'ca', '-subj', '/CN=Tributary test CA', '-days', '3650', '-keyout', 'ca.key', '-out', 'ca.pem']);
  openssl(['req', '-new', ...common, '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr']);
  openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    '2',
    '-days',
    '3650',
    '-extfile',
    'openssl.cnf',
    '-extensions',
    'server',
    '-out',
    'server.pem',
  ]);
  // mkdtemp makes a folder only its owner may enter; workers (nobody, when the tests run as root) read the CA file.
  fs.chmodSync(dir, 0o755);
  fs.chmodSync(file('ca.pem'), 0o644);
  return { dir, caFile: file('ca.pem'), cert: fs.readFileSync(file('server.pem'), 'utf8'), key: fs.readFileSync(file('server.key'), 'utf8') };
}
