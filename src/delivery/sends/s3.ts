// Carries out `$.send.s3({ bucket, prefix, payload })`: one JSON object put into a bucket of the configured S3 store.
import type { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ClaimedSend } from '../../store/sends.js';
import type { Performer, SendResult } from './result.js';

export interface S3Settings {
  /** An S3-compatible endpoint; undefined for AWS S3 in `region`. */
  endpoint: string | undefined;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
  /** Longest connecting and the request may take. */
  timeoutMs: number;
}

/** The argument of `$.send.s3()` as the worker checked it. */
interface S3SendPayload {
  bucket: string;
  prefix?: string;
  payload: unknown;
}

/** Errors a retry gets again: the bucket, the keys or the request are wrong, not the moment. */
const PERMANENT_ERRORS = new Set(['NoSuchBucket', 'AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidBucketName', 'AllAccessDisabled']);

/**
 * The object's key: the account's folder (its user id: the store's credentials are the server's, shared by every
 * account, so no account may add objects where another's go), the prefix as given, then the send's commit time and id,
 * so that a retry after an answer that was lost overwrites the same object instead of adding a second one.
 */
function objectKey(send: Pick<ClaimedSend, 'id' | 'created_ms' | 'user_id'>, prefix: string | undefined): string {
  return `${send.user_id}/${prefix ?? ''}${new Date(Number(send.created_ms)).toISOString()}-${send.id}.json`;
}

/**
 * Why the payload cannot be sent, or undefined. The worker checked it, but component code can rewrite what its worker
 * reports: checked again here. A `.` or `..` segment could lead out of the account's folder in a store that reads
 * keys as paths.
 */
function payloadProblem({ bucket, prefix }: Partial<S3SendPayload>): string | undefined {
  if (typeof bucket !== 'string' || bucket === '') return 'bucket: a non-empty string is needed';
  if (prefix === undefined) return undefined;
  if (typeof prefix !== 'string') return 'prefix: a string is needed';
  if (prefix.split('/').some((segment) => segment === '.' || segment === '..')) return 'prefix: "." and ".." segments are not allowed';
  return undefined;
}

/** The SDK's client and the one command used, loaded together. */
interface Connection {
  client: S3Client;
  PutObject: typeof PutObjectCommand;
}

export class S3Performer implements Performer {
  private connection: Promise<Connection> | undefined;

  constructor(private readonly settings: S3Settings) {}

  async perform(send: ClaimedSend, signal: AbortSignal): Promise<SendResult> {
    const { bucket, prefix, payload } = JSON.parse(send.payload) as S3SendPayload;
    const problem = payloadProblem({ bucket, prefix });
    if (problem !== undefined) return { ok: false, permanent: true, error: problem };
    try {
      const { client, PutObject } = await (this.connection ??= this.connect());
      const command = new PutObject({ Bucket: bucket, Key: objectKey(send, prefix), Body: JSON.stringify(payload), ContentType: 'application/json' });
      const answer = await client.send(command, { abortSignal: signal });
      return { ok: true, statusCode: answer.$metadata.httpStatusCode };
    } catch (error) {
      const err = error as Error & { $metadata?: { httpStatusCode?: number } };
      const status = err.$metadata?.httpStatusCode;
      // 4xx but a timeout or throttling is the request's fault, and so is any error S3 names as such.
      const clientError = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
      const permanent = PERMANENT_ERRORS.has(err.name) || clientError;
      return { ok: false, permanent, statusCode: status, error: `bucket "${bucket}": ${err.name}: ${err.message}` };
    }
  }

  async close(): Promise<void> {
    if (this.connection) (await this.connection.catch(() => undefined))?.client.destroy();
  }

  /** The SDK is loaded on the first `$.send.s3`: servers that never use it do not pay for loading it. */
  private async connect(): Promise<Connection> {
    const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const { endpoint, region, accessKeyId, secretAccessKey, forcePathStyle, timeoutMs } = this.settings;
    const client = new S3Client({
      ...(endpoint !== undefined && { endpoint }),
      region,
      forcePathStyle,
      credentials: { accessKeyId, secretAccessKey },
      // Retries follow the outbox's schedule, not the SDK's own.
      maxAttempts: 1,
      // Checksums only where S3 requires them: many S3-compatible stores refuse the newer checksum headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs },
    });
    return { client, PutObject: PutObjectCommand };
  }
}
