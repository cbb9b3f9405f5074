// Answers a save as Server-Sent Events: each npm install step as it happens, then the answer the plain route gives.
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { SaveProgress, SaveProgressListener } from '../services/components.js';
import { selectFields } from './fields.js';

/** The first frame and the heartbeat, as on the live event streams: proxies see bytes while npm works. */
const HANDSHAKE = ':sse-handshake\n\n';
const HEARTBEAT_MS = 15_000;

/** The data of a `progress` event. */
export const progressEventSchema = Type.Object({
  step: Type.Union([Type.Literal('resolving'), Type.Literal('installing'), Type.Literal('installed'), Type.Literal('cached')], {
    description:
      'resolving: npm is asked which version a range or tag means; installing: npm installs it (or another save is, and this one waits); ' +
      'installed: done; cached: that version was already installed, nothing ran',
  }),
  package: Type.String({ description: 'The npm package name' }),
  version: Type.String({ description: 'The exact version; while resolving, the range or tag the import names (latest when it names none)' }),
  index: Type.Integer({ minimum: 1, description: "The package's place among the code's npm imports, from 1, in the order they are installed" }),
  total: Type.Integer({ minimum: 1, description: "How many npm packages the code imports; a workflow's: that step's code" }),
  elapsed_ms: Type.Integer({ minimum: 0, description: 'Milliseconds since the server received the request' }),
  workflow_step: Type.Optional(Type.String({ description: 'Workflow saves only: the step whose code imports the package' })),
});

/** The data of the `result` event, always the last. */
export const resultEventSchema = Type.Object({
  status: Type.Integer({ description: 'The status the plain route would have answered' }),
  body: Type.Unknown({ description: 'The body the plain route would have answered: { data } on success, else the registered error body' }),
  retry_after: Type.Optional(Type.Integer({ description: 'The seconds of the Retry-After header the plain route would have sent' })),
});

/** The OpenAPI `response` of a progress route: the stream, with the data of each of its events. */
export function progressResponse(plainRoute: string) {
  return {
    200: {
      description:
        `text/event-stream: a \`:sse-handshake\` comment (again every 15 s), then \`event: progress\` frames as npm packages are resolved and ` +
        `installed or found in the cache, then one \`event: result\` frame with the status and body ${plainRoute} would have answered, and the end. ` +
        'A request refused before the save starts (body, key, rate, an id that is not yours) is answered as by the plain route, in JSON.',
      content: {
        'text/event-stream': {
          schema: Type.String(),
          'x-events': { progress: progressEventSchema, result: resultEventSchema },
        },
      },
    },
  };
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Starts the stream and runs `save`, telling its progress. `schema` is the plain route's 200 response schema, so that
 * the result body is serialised as the plain route serialises it (and trimmed by `include`/`exclude` as it would be).
 * The save goes on when the client leaves: its component is saved all the same, as a plain request's would be.
 */
export function streamSave(
  request: FastifyRequest,
  reply: FastifyReply,
  schema: TSchema,
  save: (onProgress: SaveProgressListener) => Promise<Record<string, unknown>>,
): FastifyReply {
  const stream = new PassThrough();
  const write = (text: string) => {
    if (!stream.writableEnded && !stream.destroyed) stream.write(text);
  };
  const heartbeat = setInterval(() => write(HANDSHAKE), HEARTBEAT_MS);
  write(HANDSHAKE);
  const onProgress = (progress: SaveProgress) => {
    const { step, name, version, index, total, workflowStep } = progress;
    const data = { step, package: name, version, index, total, elapsed_ms: Math.round(reply.elapsedTime) };
    write(frame('progress', workflowStep === undefined ? data : { ...data, workflow_step: workflowStep }));
  };
  save(onProgress)
    .then(
      (body) => {
        // A TypeBox schema is a plain JSON Schema object; Fastify's types only want an index signature.
        const serialised = reply.serializeInput(body, schema as unknown as Record<string, unknown>);
        return { status: 200, body: selectFields(request, JSON.parse(serialised)) };
      },
      (error: unknown) => {
        const { status, body, retryAfterSeconds } = request.server.answerError(error as Error, request.log);
        return retryAfterSeconds === undefined ? { status, body } : { status, body, retry_after: retryAfterSeconds };
      },
    )
    .then((result) => write(frame('result', result)))
    .catch((error: unknown) => {
      // Serialising the answer failed: a fault of ours, answered as the plain route would answer it.
      const { status, body } = request.server.answerError(error as Error, request.log);
      write(frame('result', { status, body }));
    })
    .finally(() => {
      clearInterval(heartbeat);
      stream.end();
    });
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    .header('x-accel-buffering', 'no')
    .send(stream);
}
