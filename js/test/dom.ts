// A DOM for the page's unit tests: jsdom's window, document and DOM classes
// installed as the globals the page code uses (it runs in a browser, where
// they are globals). Call installDom() before drawing anything and close the
// window after the tests (its timers would keep node running).
import { JSDOM } from "jsdom";

export function installDom(): JSDOM {
  const dom = new JSDOM("<!doctype html><html><head><title>notebook</title></head><body></body></html>", {
    pretendToBeVisual: true,
    url: "http://127.0.0.1:8888/lab",
  });
  const win = dom.window as unknown as Record<string, unknown>;
  const g = globalThis as Record<string, unknown>;
  const names = Object.getOwnPropertyNames(dom.window).filter(
    (n) =>
      /^(HTML\w*Element|\w*Event|Node|Text|Element|DocumentFragment|DOMParser|MutationObserver|NodeFilter|requestAnimationFrame|cancelAnimationFrame|getComputedStyle|localStorage)$/.test(n),
  );
  for (const name of names) g[name] = win[name];
  g.window = dom.window;
  g.document = dom.window.document;
  g.CSS = { escape: (s: string) => s.replace(/["\\]/g, "\\$&") };
  return dom;
}
