// A card that waits for the person is brought into view once, when it is out of
// sight: Run All leaves the notebook scrolled to its last cell, far from the card
// that stopped it. Nothing scrolls when the card is already in sight, or not laid
// out at all (a notebook in a tab behind another shows nothing to scroll to). A card
// brought into view is held there while the cells around it are drawn, until the
// person scrolls, clicks or types.

/** How much of a card's top must show for it to count as in sight (px; all of a shorter card). */
const TOP_PX = 48;

/** The band of the window `el` can show in: the window cut by every box around it that scrolls or clips. */
function band(el: HTMLElement): { top: number; bottom: number } {
  let top = 0;
  let bottom = window.innerHeight;
  for (let box = el.parentElement; box; box = box.parentElement) {
    const style = window.getComputedStyle(box);
    if (!/(auto|scroll|hidden|clip)/.test(`${style.overflowY} ${style.overflow}`)) continue;
    const r = box.getBoundingClientRect();
    top = Math.max(top, r.top);
    bottom = Math.min(bottom, r.bottom);
  }
  return { top, bottom };
}

/** Whether the top of `el` shows in the window: null when `el` is not laid out (no size, or not in the page). */
export function topInSight(el: HTMLElement): boolean | null {
  if (!el.isConnected) return null;
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) return null;
  const { top, bottom } = band(el);
  const head = Math.min(TOP_PX, r.height);
  return r.top >= top - 1 && r.top + head <= bottom + 1;
}

/** How long a card brought into view is held where it landed while the page around it settles (ms):
 *  JupyterLab draws the cells that come into sight a frame or more after the scroll, at their real
 *  height rather than its estimate, and the browser's scroll anchoring does not hold a card in a
 *  notebook whose cells use `content-visibility` (JupyterLab's default windowing mode). */
export const HOLD_MS = 1500;

/** What a person does that ends a hold: from then on the scroll is theirs. */
const PERSON_INPUT = ["wheel", "touchstart", "keydown", "pointerdown"] as const;

const nextFrame = (f: () => void): void => {
  if (typeof requestAnimationFrame === "function") requestAnimationFrame(f);
  else setTimeout(f, 16);
};

/** The nearest box around `el` that scrolls (its content taller than it), or null. */
function scroller(el: HTMLElement): HTMLElement | null {
  for (let box = el.parentElement; box; box = box.parentElement) {
    if (/(auto|scroll)/.test(window.getComputedStyle(box).overflowY) && box.scrollHeight > box.clientHeight) return box;
  }
  return null;
}

// ends the hold under way (one card is held at a time: the last one brought into view)
let release: (() => void) | null = null;

/** Keep `el` at the height it has in the window now, for {@link HOLD_MS}, by scrolling `box` by
 *  however far the page around it moves it; ended early by the person's own input, when `el`
 *  leaves the page or is no longer laid out, or when `wanted()` says it no longer waits (answered). */
export function holdInPlace(el: HTMLElement, box: HTMLElement, ms = HOLD_MS, wanted: () => boolean = () => true): void {
  release?.();
  const landed = el.getBoundingClientRect().top;
  const until = performance.now() + ms;
  let held = true;
  const stop = () => {
    held = false;
    for (const type of PERSON_INPUT) window.removeEventListener(type, stop, true);
    if (release === stop) release = null;
  };
  for (const type of PERSON_INPUT) window.addEventListener(type, stop, { capture: true, passive: true });
  release = stop;
  const step = () => {
    if (!held) return;
    const r = el.getBoundingClientRect();
    if (!el.isConnected || (r.width === 0 && r.height === 0) || performance.now() > until || !wanted()) return stop();
    const drift = r.top - landed;
    if (Math.abs(drift) > 1) box.scrollTop += drift;
    nextFrame(step);
  };
  nextFrame(step);
}

/** Scroll `el` into view when it is laid out and its top is out of sight, then hold it there as
 *  long as the page settles and `wanted()` (the card still waits; {@link holdInPlace}); true when
 *  it scrolled. A card that fits in the box that scrolls is centred in it (what led to it shows
 *  above, what follows below); a taller one shows from its top. */
export function bringIntoView(el: HTMLElement, wanted: () => boolean = () => true): boolean {
  if (typeof el.scrollIntoView !== "function" || topInSight(el) !== false) return false;
  const box = scroller(el);
  const room = box ? box.clientHeight : window.innerHeight;
  el.scrollIntoView({ block: el.getBoundingClientRect().height > room ? "start" : "center" });
  if (box) holdInPlace(el, box, HOLD_MS, wanted);
  return true;
}

/** Call `attempt` on the next frames until it says it is done (true), at most `tries` times
 *  (a card drawn before its output is in the page is laid out a few frames later). */
export function onLayout(attempt: () => boolean, tries = 30): void {
  const step = (left: number) => {
    if (!attempt() && left > 1) nextFrame(() => step(left - 1));
  };
  nextFrame(() => step(tries));
}
