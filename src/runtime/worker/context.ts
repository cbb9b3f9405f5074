// Builds `this` for one call of run, a step, a hook or a method: prop values, interface objects, bound apps and methods, `$emit`.
import type { HttpResponse } from '../types.js';
import type { InvokeRequest } from '../protocol.js';
import type { DataStores } from './data-store.js';
import { makeDb, type Db } from './db.js';
import { makeEmit, type Emit } from './emit.js';
import type { LoadedComponent } from './load.js';
import { isPlainObject } from './props.js';
import { makeRespond } from './respond.js';
import type { CallScope } from './scope.js';
import { FunctionPrototypeBind, ObjectHasOwn, ObjectKeys, ReflectDefineProperty } from './primordials.js';

export interface ComponentThis extends Record<string, unknown> {
  /** Absent in a step: actions do not emit (a step hands on data by returning it, exporting it or `$.send.emit`). */
  $emit?: Emit;
}

/** Functions found on an object; other values are copied as they are. */
function bindMethods(target: Record<string, unknown>, methods: unknown): void {
  if (!isPlainObject(methods)) return;
  const names = ObjectKeys(methods);
  for (let index = 0; index < names.length; index++) {
    const fn = methods[names[index]!];
    if (typeof fn === 'function') target[names[index]!] = FunctionPrototypeBind(fn as (...args: never[]) => unknown, target);
  }
}

/** A copy of the app per prop, carrying its `$auth`, with its methods bound to itself (not to the component). */
function appThis(app: Record<string, unknown>, auth: Record<string, unknown>): Record<string, unknown> {
  const self: Record<string, unknown> = { ...app, $auth: auth };
  bindMethods(self, app.methods);
  return self;
}

/** What `this` takes from the request beside prop values: the HTTP interface, `$auth` per app prop, the data stores. */
export interface ThisInputs extends Pick<InvokeRequest, 'httpEndpoint' | 'customResponse' | 'auths'> {
  stores: DataStores;
}

/**
 * `values` are the configured prop values: the request's for sources, the StepInput's for a step, whose props are
 * evaluated per run. Values of props the component does not declare statically (those `additionalProps()` adds)
 * are given as they are.
 */
export function buildThis(
  loaded: LoadedComponent,
  request: ThisInputs,
  values: Record<string, unknown>,
  scope: CallScope,
  committedDb: ReadonlyMap<string, unknown>,
  sendResponse: (response: HttpResponse) => void,
): ComponentThis {
  const declared = isPlainObject(loaded.component.props) ? loaded.component.props : {};
  const self: ComponentThis = scope.method === 'step' ? {} : { $emit: makeEmit(scope, loaded.info.dedupe) };
  let db: Db | undefined;
  for (let index = 0; index < loaded.props.length; index++) {
    const prop = loaded.props[index]!;
    const configured = values[prop.name];
    switch (prop.type) {
      case '$.service.db':
        db ??= makeDb(scope, committedDb);
        self[prop.name] = db;
        break;
      case '$.interface.http':
        self[prop.name] = { endpoint: request.httpEndpoint, respond: makeRespond(scope, request.customResponse, sendResponse) };
        break;
      case '$.interface.timer':
        self[prop.name] = { ...(isPlainObject(configured) ? configured : {}), type: '$.interface.timer' };
        break;
      case 'app': {
        const app = declared[prop.name];
        self[prop.name] = appThis(isPlainObject(app) ? app : {}, (ObjectHasOwn(request.auths, prop.name) ? request.auths[prop.name] : undefined) ?? {});
        break;
      }
      case 'data_store':
        self[prop.name] = request.stores.handle(
          scope,
          ObjectHasOwn(values, prop.name) ? configured : prop.default,
          scope.method === 'step' && prop.optional !== true ? prop.name : undefined,
        );
        break;
      default:
        self[prop.name] = ObjectHasOwn(values, prop.name) ? configured : prop.default;
    }
  }
  const names = ObjectKeys(values);
  for (let index = 0; index < names.length; index++) {
    const name = names[index]!;
    // Defined, not assigned: a value named "__proto__" must not become the prototype. Each descriptor here has no
    // prototype: a `get` or `value` component code put on Object.prototype would make it invalid (and fail every call).
    if (!ObjectHasOwn(self, name)) {
      ReflectDefineProperty(self, name, { __proto__: null, value: values[name], writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
    }
  }
  if (db) {
    // Older registry components keep their state in `this.$checkpoint`, which is the db's "$checkpoint" key.
    const checkpointDb = db;
    ReflectDefineProperty(self, '$checkpoint', {
      __proto__: null,
      get: () => checkpointDb.get('$checkpoint'),
      set: (value: unknown) => checkpointDb.set('$checkpoint', value),
      enumerable: false,
    } as PropertyDescriptor);
  }
  bindMethods(self, loaded.component.methods);
  return self;
}
