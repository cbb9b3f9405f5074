// `tributary dev <file>`: deploys a development source, follows its events, logs and errors, and on every save of the
// file (or a file it imports) re-bundles it and updates the source in place: same id, same endpoint URL.
import { context, type BuildResult, type Plugin } from 'esbuild';
import { ApiError, type ApiClient, detailLines } from './api.js';
import { escapedControls } from './terminal-text.js';
import { bundleOptions, checkComponentFile, finishBundle, messageLine } from './bundle.js';
import { createSource, type DeployOptions, replaceCode, saveBundle, type SourceData } from './deploy-source.js';
import { showStream } from './follow.js';
import { checkGivenProps } from './props-input.js';
import { endpointUrl } from './resources.js';
import { UsageError } from './usage-error.js';

export interface DevOptions extends DeployOptions {
  json: boolean;
  /** Output lines: the source deployed or updated (unless json), events, logs, errors (standard output). */
  print: (line: string) => void;
  /** Ends the session (Ctrl-C); dev resolves with the source once it fires. */
  signal: AbortSignal;
  /** Called once the session is live (its three streams open), for what is worth saying then; awaited at the end. */
  live?: () => Promise<void>;
}

/** The lines of a failed deploy or update: the server's message, then each detail (an invalid prop, a load error). */
export function failureLines(error: unknown): string[] {
  if (!(error instanceof ApiError)) return [`error: ${(error as Error).message}`];
  // A server that could not be reached has no status: "(0 unreachable)" read as a status code.
  return [escapedControls(`error: ${error.message} (${error.status ? `${error.status} ` : ''}${error.code})`), ...error.details.flatMap(detailLines)];
}

/**
 * Refusals of the first deploy that no save of the file can mend: the server out of reach or asking to wait, or the
 * key refused. dev ends with them as deploy does (exit 5 or 4), instead of asking for a fix of a file that is fine.
 */
function endsTheFirstDeploy(error: unknown): error is ApiError {
  return error instanceof ApiError && [0, 401, 403, 429, 503].includes(error.status);
}

export async function runDev(api: ApiClient, file: string, options: DevOptions): Promise<SourceData | undefined> {
  checkGivenProps(options.propsFile, options.props);
  checkComponentFile(file);
  let source: SourceData | undefined;
  let following = false;
  // Builds end while an update is in flight when saves come fast: updates run one at a time, the newest build last.
  let chain: Promise<void> = Promise.resolve();
  // What ends the session as a failed command: props missing with nobody to ask, a --prop that is not its type, or
  // a live stream refused (the source deleted elsewhere, the key rotated), after which no save could reach it.
  let fatal: Error | undefined;
  let endSession = () => {};
  let saidLive: Promise<void> = Promise.resolve();

  // What the session made, on standard output as deploy and update print it; with --json that output is events, logs
  // and errors as JSON lines only, so it is said with the progress then.
  const outcome = (line: string) => (options.json ? options.progress : options.print)(line);

  const deployBuild = async (result: BuildResult) => {
    if (result.errors.length) {
      for (const message of result.errors) options.progress(`error: ${messageLine(message)}`);
      options.progress('fix the file and save it again');
      return;
    }
    try {
      const bundle = await finishBundle(file, result);
      const component = await saveBundle(api, bundle, options.progress);
      if (source === undefined) {
        source = await createSource(api, component, options);
        const endpoint = endpointUrl(source);
        outcome(`deployed ${source.id} "${source.name}"${endpoint ? `; endpoint: ${endpoint}` : ''}`);
      } else {
        source = await replaceCode(api, source.id, component, { ...options, props: [], propsFile: undefined, name: undefined });
        outcome(`updated ${source.id} in place (same id and endpoint)`);
      }
    } catch (error) {
      // Stopped meanwhile (Ctrl-C during a question, say): what failed because of it is no news.
      if (options.signal.aborted) return;
      // No save of the file gives the first deploy a missing prop or retypes a --prop (exit 2), reaches a server that is
      // down or takes a refused key (exit 5 or 4): the command ends as deploy does.
      if (source === undefined && (error instanceof UsageError || endsTheFirstDeploy(error))) {
        fatal = error;
        endSession();
        return;
      }
      for (const line of failureLines(error)) options.progress(line);
      options.progress(source === undefined ? 'fix the file and save it again to deploy' : `${source.id} still runs the previous code`);
      return;
    }
    if (!following) {
      following = true;
      startFollowing(source.id);
    }
  };

  const startFollowing = (sourceId: string) => {
    const streams = ['events', '$logs', '$errors'] as const;
    let opened = 0;
    // Each stream says when it is open (and when it reconnects); the session is live once all three are.
    const notice = (line: string) => {
      if (/^following /.test(line)) {
        if (++opened !== streams.length) return;
        options.progress(`following ${sourceId}: events, logs and errors (Ctrl-C to stop)`);
        saidLive = options.live?.() ?? saidLive;
      } else options.progress(line);
    };
    for (const stream of streams) {
      showStream(api, sourceId, { stream, limit: 0, follow: true, json: options.json, print: options.print, notice, signal: options.signal }).catch(
        (error: unknown) => {
          if (!(error instanceof ApiError)) return options.progress(`stopped following ${stream}: ${(error as Error).message}`);
          // The three streams are refused together; the first refusal is the one said.
          fatal ??= error;
          endSession();
        },
      );
    }
  };

  const onEachBuild: Plugin = {
    name: 'tributary-dev',
    setup(build) {
      build.onStart(() => {
        if (source !== undefined) options.progress('change seen; bundling …');
      });
      build.onEnd((result) => {
        chain = chain.then(() => deployBuild(result));
        return chain;
      });
    },
  };
  const watcher = await context({ ...bundleOptions(file), plugins: [onEachBuild] });
  await watcher.watch();
  await new Promise<void>((resolve) => {
    endSession = resolve;
    if (options.signal.aborted || fatal) resolve();
    options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await watcher.dispose();
  await chain;
  await saidLive;
  if (fatal) throw fatal;
  return source;
}
