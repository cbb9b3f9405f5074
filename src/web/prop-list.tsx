// The props a form shows: the component's static props, then what its additionalProps() adds for the values so far.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, post } from './api';
import { collectValues, type FieldErrors, initialValues, type RawValues } from './prop-form';
import { readReloadErrors } from './prop-refusal';
import type { PropDescriptor } from './types';

/** How long typing in a field additionalProps() depends on may go on before the list is asked again. */
const RELOAD_AFTER_MS = 400;

export interface PropList {
  props: PropDescriptor[];
  /** The server is listing the props for the latest values. */
  loading: boolean;
  /** Why the last list could not be had (additionalProps() threw, say); the previous list stays. */
  problem: string | undefined;
  /**
   * Values the form holds that a deploy would refuse, as the last list's answer named them, on their fields: each while
   * its field still holds what was sent (edited, it is another value, which the deploy's own check will judge).
   */
  invalid: FieldErrors;
  /** Such values no field holds, said in words. */
  invalidElsewhere: string | undefined;
}

/** A value refused, with the text its field held when it was sent. */
interface Refused {
  message: string;
  raw: string | boolean | undefined;
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
  const [answer, setAnswer] = useState<{
    componentId: string;
    props: PropDescriptor[];
    problem?: string | undefined;
    refused?: Record<string, Refused>;
    elsewhere?: string | undefined;
  }>({ componentId, props: staticProps });
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
          const sentRaw = latest.current.raw;
          const { values } = collectValues(latest.current.props, sentRaw);
          const reloaded = await post<{ data: { configurable_props: PropDescriptor[]; errors: string[] } }>(
            `/components/${encodeURIComponent(componentId)}/props/reload`,
            { configured_props: values },
          );
          if (!current) return;
          const listed = reloaded.data.configurable_props;
          // Its errors say why the list could not be had, and also which values sent a deploy would refuse: those are
          // the values to fix, on their fields, not a failure to list.
          const read = readReloadErrors(reloaded.data.errors, listed, values);
          const refused = Object.fromEntries(Object.entries(read.fields).map(([name, message]) => [name, { message, raw: sentRaw[name] }]));
          setAnswer({
            componentId,
            props: listed,
            problem: read.rest.length ? read.rest.join('; ') : undefined,
            refused,
            elsewhere: read.unplaced.length ? read.unplaced.join('; ') : undefined,
          });
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

  const mine = answer.componentId === componentId;
  const invalid: FieldErrors = {};
  for (const [name, refused] of Object.entries((mine && answer.refused) || {})) if (raw[name] === refused.raw) invalid[name] = refused.message;
  return { props, loading, problem: mine ? answer.problem : undefined, invalid, invalidElsewhere: mine ? answer.elsewhere : undefined };
}

/** Says, politely, that the list is being made again, or why the last one could not be, or which values a deploy would refuse. */
export function PropListStatus(props: { list: PropList }) {
  const { loading, problem, invalid, invalidElsewhere } = props.list;
  const refused = Object.keys(invalid).length > 0 || invalidElsewhere !== undefined;
  return (
    <p class={(problem || refused) && !loading ? 'field-error' : 'hint'} aria-live="polite">
      {loading
        ? 'Listing the props these values add…'
        : [
            problem && `The props this component adds could not be listed: ${problem}. They are asked for again when a value they depend on changes.`,
            refused &&
              `A deploy would refuse ${invalidElsewhere ? `these values: ${invalidElsewhere}` : 'the values marked'}${invalidElsewhere && Object.keys(invalid).length ? ', and those marked' : ''}.`,
          ]
            .filter(Boolean)
            .join(' ')}
    </p>
  );
}
