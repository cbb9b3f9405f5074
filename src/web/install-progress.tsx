// What a save that may install npm packages shows while it runs: the time it has taken, each package's latest step as
// the server tells it, and a live line for screen readers; npm can take a minute, which must not look like a hang.
import { useEffect, useState } from 'preact/hooks';
import type { InstallStep } from './types';

/** A package's latest step; `not installed` once the save ended before it was installed or found cached. */
type ShownStep = Omit<InstallStep, 'step'> & { step: InstallStep['step'] | 'not installed' };

/** A progress line: the latest step of each package, in install order. */
function describeStep(step: ShownStep): string {
  const where = step.workflow_step ? ` (step ${step.workflow_step})` : '';
  return `${step.package}@${step.version}: ${step.step}${where} — ${step.index} of ${step.total}, ${(step.elapsed_ms / 1000).toFixed(1)} s`;
}

export interface InstallProgress {
  /** The latest step of each package, by `<workflow step>/<package>`, in the order first heard. */
  steps: Map<string, ShownStep>;
  /** The last step heard, for the live line. */
  latest: string;
  /** When the save began (ms), while it runs. */
  since: number | undefined;
  start: () => void;
  onStep: (step: InstallStep) => void;
  done: () => void;
}

export function useInstallProgress(): InstallProgress {
  const [steps, setSteps] = useState<Map<string, ShownStep>>(new Map());
  const [latest, setLatest] = useState('');
  const [since, setSince] = useState<number | undefined>(undefined);
  return {
    steps,
    latest,
    since,
    start: () => {
      setSteps(new Map());
      setLatest('');
      setSince(Date.now());
    },
    onStep: (step) => {
      setSteps((seen) => new Map(seen).set(`${step.workflow_step ?? ''}/${step.package}`, step));
      setLatest(describeStep(step));
    },
    done: () => {
      setSince(undefined);
      // The server tells no failed step: a package whose install failed (or that a refusal stopped) stayed listed as
      // "resolving" or "installing" under the refusal, as if npm were still at work.
      setSteps((seen) => {
        const unfinished = [...seen.values()].some((step) => step.step === 'resolving' || step.step === 'installing');
        if (!unfinished) return seen;
        const ended = [...seen].map(([key, step]): [string, ShownStep] =>
          step.step === 'resolving' || step.step === 'installing' ? [key, { ...step, step: 'not installed' }] : [key, step],
        );
        return new Map(ended);
      });
    },
  };
}

/**
 * While the save runs, `working` and the seconds since it began (counted here, since the server says nothing until
 * npm has something to tell, or at all when the code imports no package); then, and after, each package's step.
 */
export function InstallProgressView(props: { progress: InstallProgress; working: string }) {
  const { steps, latest, since } = props.progress;
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (since === undefined) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [since]);
  return (
    <>
      {/* Not a live region: a screen reader would read the count every second; the live line says what happens. */}
      {since !== undefined && (
        <p class="install-status">
          {props.working} <span class="install-elapsed">{Math.max(0, Math.floor((now - since) / 1000))} s</span>
        </p>
      )}
      {steps.size > 0 && (
        <ul class="install-progress" aria-label="Installing packages">
          {[...steps.entries()].map(([key, step]) => (
            <li key={key}>{describeStep(step)}</li>
          ))}
        </ul>
      )}
      <p class="sr-only" aria-live="polite">
        {latest}
      </p>
    </>
  );
}
