// Takes from component code the V8 calls that read the worker's heap, where the channel token lives.
import { syncBuiltinESMExports } from 'node:module';
import v8 from 'node:v8';

/**
 * The token every message to the server carries is a string on the worker's heap, and a heap snapshot lists every
 * string with the property that holds it (`token`): code that took one could forge the runtime's messages, and with
 * them events, db and data store writes past every limit the worker enforces. The permission model shuts the inspector
 * and heap snapshots written to files, not these: `getHeapSnapshot` streams one back, `queryObjects` previews live
 * objects, and `setFlagsFromString` could turn on V8 features (natives syntax, snapshots near the heap limit) that do.
 * Must run before any component code; ES module imports of `node:v8` see the same refusals.
 */
export function sealHeapInspection(): void {
  for (const name of ['getHeapSnapshot', 'writeHeapSnapshot', 'setHeapSnapshotNearHeapLimit', 'queryObjects', 'setFlagsFromString']) {
    Object.defineProperty(v8, name, {
      value: () => {
        throw Object.assign(new Error(`v8.${name} is not available to components`), { code: 'ERR_ACCESS_DENIED' });
      },
      writable: false,
      configurable: false,
      enumerable: true,
    });
  }
  syncBuiltinESMExports();
}
