// What every call into a source's code carries, whatever it calls: the prepared bundle, decrypted props, its endpoint.
import type { ComponentRuntime } from '../runtime/index.js';
import type { ComponentInfo, InvocationRequest } from '../runtime/types.js';
import type { ComponentRow } from '../store/components.js';
import type { SourceRow } from '../store/sources.js';
import type { SecretBox } from '../lib/secrets.js';
import { runtimeProps } from '../model/props.js';

export type InvocationBase = Omit<InvocationRequest, 'method' | 'events' | 'db'>;

export interface InvocationBaseSettings {
  /** Endpoint URLs are built on it. */
  publicUrl: string;
  runTimeoutSeconds: number;
}

/** Builds invocation bases for the dispatcher's runs and the source service's hooks alike. */
export class InvocationBases {
  constructor(
    private readonly runtime: ComponentRuntime,
    private readonly secrets: SecretBox,
    private readonly settings: InvocationBaseSettings,
  ) {}

  endpointUrl(endpointId: string | null): string | undefined {
    return endpointId ? `${this.settings.publicUrl}/e/${endpointId}` : undefined;
  }

  /** Everything the runtime needs to call code of this source, props decrypted. */
  async of(source: SourceRow, component: ComponentRow, info: ComponentInfo): Promise<InvocationBase> {
    const prepared = await this.runtime.prepare(component.code);
    const http = info.props.find((p) => p.type === '$.interface.http');
    return {
      accountId: source.user_id,
      sourceId: source.id,
      component: prepared,
      props: runtimeProps(info.props, JSON.parse(source.configured_props), this.secrets),
      auths: Object.fromEntries(info.props.filter((p) => p.type === 'app').map((p) => [p.name, {}])),
      httpEndpoint: this.endpointUrl(source.endpoint_id),
      customResponse: http?.customResponse === true,
      timeoutMs: this.settings.runTimeoutSeconds * 1000,
    };
  }
}
