// Carries out `$.send.email({ subject, text, html })`: one message to the workflow owner's account email over SMTP.
import type { NodemailerError, Transporter } from 'nodemailer';
import type { ClaimedSend } from '../../store/sends.js';
import { refused, type Performer, type SendResult } from './result.js';

export interface EmailSettings {
  /** `smtp://user:password@host:587` or `smtps://…`; holds a password, so it never appears in an error. */
  smtpUrl: string;
  from: string;
  /** Longest connecting, the greeting and each later wait on the server may take. */
  timeoutMs: number;
}

/** The argument of `$.send.email()` as the worker checked it (a subject, and a text or html body). */
interface EmailSendPayload {
  subject: string;
  text?: string;
  html?: string;
}

/**
 * Why the payload cannot be sent, or undefined. The worker checked it, but component code can rewrite what its worker
 * reports, and nodemailer takes an object body as where to read one: `{ path }` a file of the server's, `{ href }` a
 * URL. Only strings are sent.
 */
function payloadProblem({ subject, text, html }: Partial<Record<keyof EmailSendPayload, unknown>>): string | undefined {
  if (typeof subject !== 'string') return 'subject: a string is needed';
  if (text !== undefined && typeof text !== 'string') return 'text: a string is needed';
  if (html !== undefined && typeof html !== 'string') return 'html: a string is needed';
  if (text === undefined && html === undefined) return 'a text or html body is needed';
  return undefined;
}

/** Failures no later attempt can mend: a refused login, a configuration the transport cannot use. */
const PERMANENT_CODES = new Set(['EAUTH', 'ECONFIG', 'EENVELOPE']);

export class EmailPerformer implements Performer {
  private transport: Promise<Transporter> | undefined;

  constructor(private readonly settings: EmailSettings) {}

  /** Not cut off when the server stops: a message is sent or not, and its outcome is recorded either way. */
  async perform(send: ClaimedSend): Promise<SendResult> {
    if (!send.account_email) return refused("the workflow's account has no email address");
    const { subject, text, html } = JSON.parse(send.payload) as EmailSendPayload;
    const problem = payloadProblem({ subject, text, html });
    if (problem !== undefined) return refused(problem);
    try {
      await (await this.transportOnce()).sendMail({ to: send.account_email, subject, text, html });
      return { ok: true };
    } catch (error) {
      const err = error as NodemailerError;
      // An SMTP reply says itself whether it is final (5xx but 503); without one, only the codes above are.
      const permanent = err.permanent ?? PERMANENT_CODES.has(err.code ?? '');
      return { ok: false, permanent, error: describe(err) };
    }
  }

  async close(): Promise<void> {
    (await this.transport?.catch(() => undefined))?.close();
  }

  /** nodemailer is loaded with the first message: a server that sends no email keeps its ~1.6 MB of heap. */
  private transportOnce(): Promise<Transporter> {
    this.transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      // One connection per message: sends are few, and a pool would hold connections the server rarely uses.
      nodemailer.createTransport(
        {
          url: this.settings.smtpUrl,
          connectionTimeout: this.settings.timeoutMs,
          greetingTimeout: this.settings.timeoutMs,
          socketTimeout: this.settings.timeoutMs,
          // Bodies are the account's strings, never a file or URL nodemailer would read for them.
          disableFileAccess: true,
          disableUrlAccess: true,
        },
        { from: this.settings.from },
      ),
    );
    return this.transport;
  }
}

/** The send's `last_error`: the server's reply when there is one, else what failed; never the SMTP URL. */
function describe(error: NodemailerError): string {
  const reply = error.response ?? error.message;
  return error.code ? `${error.code}: ${reply}` : reply;
}
