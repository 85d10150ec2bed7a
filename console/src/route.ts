// Routing by the URL fragment (#/automations/aut_1): the server serves one page, and a reload
// lands on the same view (after signing in again, since nothing is stored).
import { useEffect, useState } from "preact/hooks";

export function currentRoute(): string[] {
  return window.location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join("/")}`;
}

export function navigate(...parts: string[]): void {
  window.location.hash = href(...parts);
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
