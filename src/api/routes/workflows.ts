// Workflows, an extension of the REST interface: define, change, delete and run them, and read their runs.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { WorkflowService } from '../../services/workflows.js';
import type { WorkflowRunService } from '../../services/workflow-runs.js';
import { MAX_RUN_TIMEOUT_SECONDS, MAX_STEPS } from '../../model/workflows.js';
import { dataOf, noBody, pageBody, pageOf, paginationQuery, toPageRequest } from '../envelope.js';
import { fieldParams } from '../fields.js';
import { progressResponse, streamSave } from '../progress-stream.js';
import { MAX_CHANNEL_NAME_CHARS } from '../../runtime/worker/limits.js';

// Workflow management is not in the specification: the whole resource is an extension.
const TAGS = ['workflows', 'extensions'];

const triggerSchema = Type.Union([
  Type.Object(
    {
      type: Type.Literal('http'),
      custom_response: Type.Optional(Type.Boolean({ description: 'default false' })),
      endpoint_url: Type.Optional(Type.String({ description: 'read-only: what a GET shows, taken back and ignored (the endpoint stays)' })),
    },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('timer'), interval_seconds: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal('timer'), cron: Type.String({ minLength: 1 }), timezone: Type.Optional(Type.String({ minLength: 1 })) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('source'),
      source_id: Type.String(),
      // As a subscription's: the trigger makes one.
      event_name: Type.Optional(Type.String({ maxLength: MAX_CHANNEL_NAME_CHARS, description: "default '' (the default stream)" })),
    },
    { additionalProperties: false },
  ),
]);

const stepBody = Type.Object(
  {
    name: Type.String({ description: 'An identifier; the step is `steps.<name>` to later steps' }),
    component_code: Type.Optional(Type.String({ description: 'Code of an action or a code step (`defineComponent({ run })`)' })),
    component_id: Type.Optional(Type.String({ description: 'A saved action component' })),
    component_key: Type.Optional(Type.String({ description: 'A registry action' })),
    configured_props: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Values or templates such as "{{ steps.trigger.event.body.x }}"' }),
    ),
  },
  { additionalProperties: false },
);

const workflowFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  trigger: Type.Optional(Type.Union([triggerSchema, Type.Null()])),
  steps: Type.Optional(Type.Array(stepBody, { minItems: 1, maxItems: MAX_STEPS })),
  active: Type.Optional(Type.Boolean()),
  timeout_seconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_RUN_TIMEOUT_SECONDS, description: 'Running time of a run over all its steps; default 30' }),
  ),
  ...fieldParams,
};

/** What a GET shows and a client may send back with its changes (GET, edit, PUT): taken and ignored. */
const readOnlyEchoes = {
  id: Type.Optional(Type.String({ description: 'read-only: ignored' })),
  created_at: Type.Optional(Type.Integer({ description: 'read-only: ignored' })),
  updated_at: Type.Optional(Type.Integer({ description: 'read-only: ignored' })),
};

// Unknown fields are refused, as in steps and triggers: a misspelt `timout_seconds` or `actve` would otherwise answer 200
// and change nothing. (Sources keep the specification's lenient reading; workflows are Tributary's own.)
const workflowBody = Type.Object({ ...workflowFields, ...readOnlyEchoes }, { additionalProperties: false });

const workflowSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  active: Type.Boolean(),
  trigger: Type.Union([Type.Object({ type: Type.String() }, { additionalProperties: true }), Type.Null()]),
  steps: Type.Array(Type.Object({ name: Type.String(), component_id: Type.String(), configured_props: Type.Record(Type.String(), Type.Unknown()) })),
  timeout_seconds: Type.Number(),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

const runStepSchema = Type.Object({
  name: Type.String(),
  status: Type.String(),
  started_at_ms: Type.Integer(),
  duration_ms: Type.Number(),
  $return_value: Type.Optional(Type.Unknown()),
  exports: Type.Record(Type.String(), Type.Unknown()),
  logs: Type.Array(Type.Unknown()),
  error: Type.Optional(Type.Unknown()),
  sends: Type.Array(
    Type.Object({
      kind: Type.String({ description: 'http, email or s3' }),
      state: Type.String({ description: 'pending, succeeded or failed' }),
      attempt: Type.Integer(),
      status_code: Type.Optional(Type.Integer()),
      last_error: Type.Optional(Type.String()),
    }),
  ),
});

const runStatus = Type.Union(
  ['queued', 'running', 'delayed', 'succeeded', 'failed'].map((s) => Type.Literal(s as 'queued' | 'running' | 'delayed' | 'succeeded' | 'failed')),
  { description: 'only runs in this state' },
);

const runSchema = Type.Object({
  id: Type.String(),
  workflow_id: Type.String(),
  status: Type.String({ description: 'queued, running, delayed, succeeded or failed' }),
  trigger: Type.String({ description: 'http, timer, event, manual or replay' }),
  event: Type.Unknown(),
  created_at_ms: Type.Integer(),
  finished_at_ms: Type.Union([Type.Integer(), Type.Null()]),
  exit_reason: Type.Optional(Type.String()),
  resumes_at_ms: Type.Optional(Type.Integer({ description: 'a delayed run: when its next step is due' })),
  error: Type.Optional(Type.Unknown()),
  replay_of: Type.Optional(Type.String()),
  steps: Type.Array(runStepSchema),
});

const idParams = Type.Object({ id: Type.String() });
const runParams = Type.Object({ id: Type.String(), run_id: Type.String() });

export function workflowRoutes(services: { workflows: WorkflowService; workflowRuns: WorkflowRunService }): FastifyPluginAsync {
  return async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const { workflows, workflowRuns } = services;

    app.get(
      '/users/me/workflows',
      {
        schema: {
          tags: TAGS,
          summary: "The account's workflows, newest first",
          querystring: Type.Object(paginationQuery),
          response: { 200: pageOf(workflowSchema) },
        },
      },
      async (request) => pageBody(await workflows.list(request.account.id, toPageRequest(request.query)), (w) => w),
    );

    app.post(
      '/workflows',
      {
        schema: {
          tags: TAGS,
          summary: 'Create a workflow: a trigger (http, timer, source or none) and ordered steps',
          body: workflowBody,
          response: { 200: dataOf(workflowSchema) },
        },
      },
      async (request) => ({ data: await workflows.create(request.account.id, request.body) }),
    );

    app.post(
      '/workflows/stream',
      {
        schema: {
          tags: TAGS,
          summary: "Create a workflow as POST /v1/workflows does, telling each npm install of its steps' code as it happens (Server-Sent Events)",
          body: workflowBody,
          response: progressResponse('POST /v1/workflows'),
        },
      },
      async (request, reply) =>
        streamSave(request, reply, dataOf(workflowSchema), async (onProgress) => ({
          data: await workflows.create(request.account.id, request.body, onProgress),
        })),
    );

    app.get(
      '/workflows/:id',
      { schema: { tags: TAGS, summary: 'A workflow', params: idParams, querystring: Type.Object(fieldParams), response: { 200: dataOf(workflowSchema) } } },
      async (request) => ({ data: await workflows.get(request.account.id, request.params.id) }),
    );

    app.put(
      '/workflows/:id',
      {
        schema: {
          tags: TAGS,
          summary: 'Change a workflow: the fields given replace the stored ones (steps as a whole), the others are kept',
          params: idParams,
          body: workflowBody,
          response: { 200: dataOf(workflowSchema) },
        },
      },
      async (request) => ({ data: await workflows.update(request.account.id, request.params.id, request.body) }),
    );

    app.put(
      '/workflows/:id/stream',
      {
        schema: {
          tags: TAGS,
          summary: "Change a workflow as PUT /v1/workflows/{id} does, telling each npm install of its steps' code as it happens (Server-Sent Events)",
          params: idParams,
          body: workflowBody,
          response: progressResponse('PUT /v1/workflows/{id}'),
        },
      },
      async (request, reply) => {
        // Another account's id (or none) is refused before the stream opens, in JSON, as the plain route would.
        await workflows.owned(request.account.id, request.params.id);
        return streamSave(request, reply, dataOf(workflowSchema), async (onProgress) => ({
          data: await workflows.update(request.account.id, request.params.id, request.body, onProgress),
        }));
      },
    );

    app.delete(
      '/workflows/:id',
      {
        schema: {
          tags: TAGS,
          summary: 'Delete a workflow with its runs, events and subscriptions',
          params: idParams,
          querystring: Type.Object(fieldParams),
          response: { 204: noBody },
        },
      },
      async (request, reply) => {
        await workflows.delete(request.account.id, request.params.id);
        return reply.status(204).send(null);
      },
    );

    app.post(
      '/workflows/:id/run',
      {
        schema: {
          tags: TAGS,
          summary: 'Start a run with the given event (the body; {} when empty)',
          params: idParams,
          body: Type.Optional(Type.Unknown()),
          response: { 202: dataOf(runSchema) },
        },
      },
      async (request, reply) =>
        reply.status(202).send({ data: await workflowRuns.runNow(request.account.id, request.params.id, request.body === undefined ? {} : request.body) }),
    );

    app.get(
      '/workflows/:id/runs',
      {
        schema: {
          tags: TAGS,
          summary: "The workflow's runs, newest first, each with its steps",
          params: idParams,
          querystring: Type.Object({ ...paginationQuery, status: Type.Optional(runStatus) }),
          response: { 200: pageOf(runSchema) },
        },
      },
      async (request) =>
        pageBody(await workflowRuns.listRuns(request.account.id, request.params.id, toPageRequest(request.query), request.query.status), (r) => r),
    );

    app.get(
      '/workflows/:id/runs/:run_id',
      {
        schema: { tags: TAGS, summary: 'A run with each step', params: runParams, querystring: Type.Object(fieldParams), response: { 200: dataOf(runSchema) } },
      },
      async (request) => ({ data: await workflowRuns.getRun(request.account.id, request.params.id, request.params.run_id) }),
    );

    app.post(
      '/workflows/:id/runs/:run_id/replay',
      { schema: { tags: TAGS, summary: 'Start a new run with the original event of a run', params: runParams, response: { 202: dataOf(runSchema) } } },
      async (request, reply) => reply.status(202).send({ data: await workflowRuns.replay(request.account.id, request.params.id, request.params.run_id) }),
    );
  };
}
