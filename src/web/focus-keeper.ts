// Keeps the keyboard in the page's content when the focused control goes away (its row deleted, its page left).
import { useEffect } from 'preact/hooks';

/**
 * When the element that had the focus leaves the page (a deleted webhook's Delete button, a deleted source's page), the
 * browser drops the focus to the document, and the next Tab starts again from its top; it goes to `#main` instead.
 */
export function useFocusKeeper(): void {
  useEffect(() => {
    let focused: Element | null = null;
    const remember = (event: FocusEvent) => {
      focused = event.target instanceof Element ? event.target : null;
    };
    const observer = new MutationObserver(() => {
      if (focused && !focused.isConnected && (document.activeElement === document.body || document.activeElement === null)) {
        focused = null;
        document.getElementById('main')?.focus();
      }
    });
    document.addEventListener('focusin', remember);
    observer.observe(document.body, { childList: true, subtree: true });
    return () => {
      document.removeEventListener('focusin', remember);
      observer.disconnect();
    };
  }, []);
}
