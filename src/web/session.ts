// The API key of this browser tab: in session storage only (gone when the tab closes), never in a URL or a cookie.

const STORAGE_KEY = 'tributary.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function clearKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
