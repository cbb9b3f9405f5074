// Says pg's warning about sslmode=prefer/require/verify-ca on one line of the command's own, in place of Node's nine-line process warning.

/** How pg-connection-string's warning begins (pg 8): it names the mode later, in its advice. */
const PG_SSL_MODE_WARNING = "SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca' are treated as aliases for 'verify-full'";

/**
 * pg-connection-string emits a nine-line process warning, once per process, for a database URL with `sslmode=prefer`,
 * `require` or `verify-ca`, as it parses it: printed by Node between the command's own lines, with Node's
 * `(node:1234)` and `--trace-warnings` advice, about the driver's versions rather than what the operator can do. That
 * one is said as one `warning:` line on standard error; every other warning goes to Node as it came.
 */
export function sayPgSslModeWarningOnOneLine(): void {
  const emitWarning = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const message = typeof warning === 'string' ? warning : warning.message;
    if (!message.startsWith(PG_SSL_MODE_WARNING)) return emitWarning(warning, ...rest);
    const mode = /uselibpqcompat=true&sslmode=([a-z-]+)/.exec(message)?.[1] ?? 'require';
    process.stderr.write(
      `warning: sslmode=${mode} in the database URL is taken as verify-full by this build's PostgreSQL driver (the server's certificate is checked against trusted CAs and its host name); ` +
        `write sslmode=verify-full to keep that, or add uselibpqcompat=true to the URL for libpq's meaning of sslmode=${mode}\n`,
    );
  }) as typeof process.emitWarning;
}
