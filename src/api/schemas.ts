// Schemas of the resources the API returns, shared by validation, serialisation and the OpenAPI document.
import { Type } from 'typebox';

export const propDescriptorSchema = Type.Object(
  {
    name: Type.String(),
    type: Type.String(),
    label: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    default: Type.Optional(Type.Unknown()),
    optional: Type.Optional(Type.Boolean()),
    secret: Type.Optional(Type.Boolean()),
    hidden: Type.Optional(Type.Boolean({ description: 'not shown in a form until additionalProps() unhides it' })),
    disabled: Type.Optional(Type.Boolean({ description: 'shown but not editable' })),
    useQuery: Type.Optional(Type.Boolean({ description: 'options() take what is typed as query' })),
    min: Type.Optional(Type.Number()),
    max: Type.Optional(Type.Number()),
    options: Type.Optional(Type.Array(Type.Unknown())),
    remoteOptions: Type.Optional(Type.Boolean()),
    app: Type.Optional(Type.String()),
    customResponse: Type.Optional(Type.Boolean()),
    intervalSeconds: Type.Optional(Type.Integer()),
    cron: Type.Optional(Type.String()),
    timezone: Type.Optional(Type.String()),
    propDefinition: Type.Optional(Type.Array(Type.String())),
    alertType: Type.Optional(Type.String({ description: 'type alert: info, neutral, warning or error' })),
    content: Type.Optional(Type.String({ description: 'type alert: the note shown to whoever configures the component; an alert takes no value' })),
  },
  { additionalProperties: true },
);

export const componentSchema = Type.Object({
  id: Type.String({ description: 'prefix sc_' }),
  code: Type.String(),
  code_hash: Type.String({ description: 'hex SHA-256 of the code' }),
  name: Type.String(),
  version: Type.String(),
  configurable_props: Type.Array(propDescriptorSchema),
  created_at: Type.Integer({ description: 'epoch seconds' }),
  updated_at: Type.Integer({ description: 'epoch seconds' }),
});

export const sourceSchema = Type.Object({
  id: Type.String({ description: 'prefix dc_' }),
  user_id: Type.Optional(Type.String({ description: 'prefix u_; in create and update responses' })),
  component_id: Type.String({ description: 'prefix sc_' }),
  configured_props: Type.Record(Type.String(), Type.Unknown()),
  active: Type.Boolean(),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  name: Type.String(),
  name_slug: Type.String(),
});

export const eventSummarySchema = Type.Object({
  id: Type.String({ description: '<epoch_ms>-<sequence>' }),
  indexed_at_ms: Type.Integer(),
  event: Type.Unknown(),
  metadata: Type.Object(
    {
      emitter_id: Type.String(),
      emit_id: Type.String(),
      name: Type.String(),
      summary: Type.Optional(Type.String()),
      id: Type.Optional(Type.Union([Type.String(), Type.Number()])),
      ts: Type.Optional(Type.Integer()),
    },
    { additionalProperties: true },
  ),
});

/** The `{id}` of a source's routes. */
export const sourceIdParams = Type.Object({ id: Type.String() });
