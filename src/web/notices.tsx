// Messages about what just happened (saved, deleted, failed), announced by screen readers through one live region.
import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useState } from 'preact/hooks';

export interface Notice {
  kind: 'ok' | 'error';
  text: string;
}

const NoticeContext = createContext<(notice: Notice) => void>(() => {});

export function useNotify(): (notice: Notice) => void {
  return useContext(NoticeContext);
}

export function NoticeProvider(props: { children: ComponentChildren }) {
  const [notice, setNotice] = useState<Notice | undefined>(undefined);
  const notify = useCallback((next: Notice) => setNotice(next), []);
  return (
    <NoticeContext.Provider value={notify}>
      {/* Always in the page, so that its height is reserved and a message does not push the content down. */}
      <div class={`notice ${notice?.kind ?? ''}`} role={notice?.kind === 'error' ? 'alert' : 'status'} aria-live="polite">
        {notice && (
          <>
            <span>{notice.text}</span>
            <button type="button" class="link" onClick={() => setNotice(undefined)} aria-label="Dismiss message">
              ×
            </button>
          </>
        )}
      </div>
      {props.children}
    </NoticeContext.Provider>
  );
}
