// The props a form shows: the component's static props, then what its additionalProps() adds for the values so far.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, post } from './api';
import { collectValues, initialValues, type RawValues } from './prop-form';
import type { PropDescriptor } from './types';

/** How long typing in a field additionalProps() depends on may go on before the list is asked again. */
const RELOAD_AFTER_MS = 400;

export interface PropList {
  props: PropDescriptor[];
  /** The server is listing the props for the latest values. */
  loading: boolean;
  /** Why the last list could not be had (additionalProps() threw, say); the previous list stays. */
  problem: string | undefined;
}

/** The values of the props additionalProps() depends on (`reloadProps: true`), as one key: a change asks again. */
function reloadKey(props: PropDescriptor[], raw: RawValues): string {
  return JSON.stringify(props.filter((p) => p.reloadProps).map((p) => raw[p.name] ?? null));
}

/**
 * The full prop list through `POST /components/{id}/props/reload`: asked once for the component (a component without
 * additionalProps() is answered at once, from its static props) and again when a `reloadProps` prop's value changes.
 * Props it adds get their starting text in `raw` through `setRaw`, from `configured` (a source's stored values) or
 * their defaults.
 */
export function usePropList(
  componentId: string,
  staticProps: PropDescriptor[],
  raw: RawValues,
  setRaw: (update: (raw: RawValues) => RawValues) => void,
  configured: Record<string, unknown> = {},
): PropList {
  const [answer, setAnswer] = useState<{ componentId: string; props: PropDescriptor[]; problem?: string }>({ componentId, props: staticProps });
  const [loading, setLoading] = useState(false);
  // Another component starts from its own static props.
  const props = answer.componentId === componentId ? answer.props : staticProps;
  const key = reloadKey(props, raw);
  // Read when the timer fires, not when it was set: the values typed meanwhile are those sent.
  const latest = useRef({ props, raw, configured });
  latest.current = { props, raw, configured };
  const asked = useRef<string | undefined>(undefined);

  useEffect(() => {
    if (!componentId) return;
    let current = true;
    const first = asked.current !== componentId;
    asked.current = componentId;
    const timer = setTimeout(
      async () => {
        setLoading(true);
        try {
          // Values that do not check yet are left out: the list is for what is known so far.
          const { values } = collectValues(latest.current.props, latest.current.raw);
          const reloaded = await post<{ data: { configurable_props: PropDescriptor[]; errors: string[] } }>(
            `/components/${encodeURIComponent(componentId)}/props/reload`,
            { configured_props: values },
          );
          if (!current) return;
          const listed = reloaded.data.configurable_props;
          const problem = reloaded.data.errors.length ? reloaded.data.errors.join('; ') : undefined;
          setAnswer({ componentId, props: listed, problem });
          setRaw((previous) => ({
            ...initialValues(
              listed.filter((p) => !(p.name in previous)),
              latest.current.configured,
            ),
            ...previous,
          }));
        } catch (failure) {
          if (current) setAnswer({ componentId, props: latest.current.props, problem: describeError(failure) });
        } finally {
          if (current) setLoading(false);
        }
      },
      first ? 0 : RELOAD_AFTER_MS,
    );
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [componentId, key]);

  return { props, loading, problem: answer.componentId === componentId ? answer.problem : undefined };
}

/** Says, politely, that the list is being made again, or why the last one could not be. */
export function PropListStatus(props: { list: PropList }) {
  const { loading, problem } = props.list;
  return (
    <p class={problem && !loading ? 'field-error' : 'hint'} aria-live="polite">
      {loading
        ? 'Listing the props these values add…'
        : problem
          ? `The props this component adds could not be listed: ${problem}. They are asked for again when a value they depend on changes.`
          : ''}
    </p>
  );
}
