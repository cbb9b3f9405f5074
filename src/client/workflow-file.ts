// Reads a workflow file (YAML or JSON: name, trigger, steps with paths to step files) into the body of POST /v1/workflows.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { BundleError, bundleCode, checkComponentFile } from './bundle.js';
import { DEFAULT_RUN_TIMEOUT_SECONDS } from '../model/workflows.js';

/** A step as the file writes it: exactly one of `path` (a file of code), `component_id` or `component_key`. */
interface FileStep {
  name: string;
  path?: string;
  component_id?: string;
  component_key?: string;
  props?: Record<string, unknown>;
}

/** The request body a workflow file becomes. */
export interface WorkflowBody {
  name: string;
  trigger?: unknown;
  active?: boolean;
  timeout_seconds?: number;
  steps: Array<{ name: string; component_code?: string; component_id?: string; component_key?: string; configured_props?: Record<string, unknown> }>;
}

/** A workflow file that cannot be read; the message names the file and the field. */
export class WorkflowFileError extends Error {
  override name = 'WorkflowFileError';
}

const TOP_LEVEL = new Set(['name', 'trigger', 'active', 'timeout_seconds', 'steps']);
const STEP_FIELDS = new Set(['name', 'path', 'component_id', 'component_key', 'props']);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses and checks the file, reads and bundles every step file (paths relative to the workflow file). */
export async function readWorkflowFile(file: string): Promise<WorkflowBody> {
  const text = await fs.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    // A folder given (`--workflow steps`) said Node's `EISDIR: illegal operation on a directory, read`.
    const why = error.code === 'ENOENT' ? 'no such file' : error.code === 'EISDIR' ? 'it is a folder, not a workflow file' : error.message;
    throw new WorkflowFileError(`cannot read ${file}: ${why}`);
  });
  let parsed: unknown;
  try {
    parsed = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new WorkflowFileError(`${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) throw new WorkflowFileError(`${file}: the file must hold an object with name, trigger and steps`);
  const unknown = Object.keys(parsed).filter((key) => !TOP_LEVEL.has(key));
  if (unknown.length) throw new WorkflowFileError(`${file}: unknown field "${unknown[0]}" (known: ${[...TOP_LEVEL].join(', ')})`);
  if (typeof parsed.name !== 'string' || parsed.name.trim() === '') throw new WorkflowFileError(`${file}: name must be a non-empty string`);
  if (!Array.isArray(parsed.steps) || parsed.steps.length === 0) throw new WorkflowFileError(`${file}: steps must be a list of at least one step`);
  const dir = path.dirname(path.resolve(file));
  const steps: WorkflowBody['steps'] = [];
  for (const [i, raw] of (parsed.steps as unknown[]).entries()) {
    const where = `${file}: steps[${i}]`;
    if (!isObject(raw)) throw new WorkflowFileError(`${where} must be an object`);
    const extra = Object.keys(raw).filter((key) => !STEP_FIELDS.has(key));
    if (extra.length) throw new WorkflowFileError(`${where}: unknown field "${extra[0]}" (known: ${[...STEP_FIELDS].join(', ')})`);
    const step = raw as unknown as FileStep;
    if (typeof step.name !== 'string') throw new WorkflowFileError(`${where}: name must be a string`);
    const sources = [step.path, step.component_id, step.component_key].filter((v) => v !== undefined);
    if (sources.length !== 1) throw new WorkflowFileError(`${where} ("${step.name}"): give exactly one of path, component_id or component_key`);
    if (step.props !== undefined && !isObject(step.props)) throw new WorkflowFileError(`${where} ("${step.name}"): props must be an object`);
    const out: WorkflowBody['steps'][number] = { name: step.name };
    if (step.path !== undefined) {
      const stepFile = path.resolve(dir, step.path);
      try {
        // A step file that is not there: esbuild's `Could not resolve "/abs/path"` named a path nobody wrote.
        checkComponentFile(stepFile);
      } catch (error) {
        if (!(error instanceof BundleError)) throw error;
        throw new WorkflowFileError(`${where} ("${step.name}"): path ${error.lines[0]}`);
      }
      try {
        out.component_code = await bundleCode(stepFile);
      } catch (error) {
        if (!(error instanceof BundleError)) throw error;
        throw new WorkflowFileError(`${where} ("${step.name}"): cannot bundle ${step.path}: ${error.lines[0]}`);
      }
    }
    if (step.component_id !== undefined) out.component_id = step.component_id;
    if (step.component_key !== undefined) out.component_key = step.component_key;
    if (step.props !== undefined) out.configured_props = step.props;
    steps.push(out);
  }
  const body: WorkflowBody = { name: parsed.name, steps };
  // The file says all there is: without a trigger the workflow has none, also when a deploy updates one that had it.
  body.trigger = parsed.trigger ?? null;
  if (parsed.active !== undefined) body.active = parsed.active as boolean;
  // Taken out of the file, a timeout goes back to the default, as a trigger taken out goes; kept, it outlived the line.
  body.timeout_seconds = (parsed.timeout_seconds as number | undefined) ?? DEFAULT_RUN_TIMEOUT_SECONDS;
  return body;
}
