// A card that waits for the person is brought into view once, when it is out of
// sight: Run All leaves the notebook scrolled to its last cell, far from the card
// that stopped it. Nothing scrolls when the card is already in sight, or not laid
// out at all (a notebook in a tab behind another shows nothing to scroll to).

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

/** Scroll `el` into view when it is laid out and its top is out of sight; true when it scrolled. */
export function bringIntoView(el: HTMLElement): boolean {
  if (typeof el.scrollIntoView !== "function" || topInSight(el) !== false) return false;
  const { top, bottom } = band(el);
  // a card taller than the band shows from its top; a shorter one moves as little as it can
  el.scrollIntoView({ block: el.getBoundingClientRect().height > bottom - top ? "start" : "nearest" });
  return true;
}

/** Call `attempt` on the next frames until it says it is done (true), at most `tries` times
 *  (a card drawn before its output is in the page is laid out a few frames later). */
export function onLayout(attempt: () => boolean, tries = 30): void {
  const next = typeof requestAnimationFrame === "function" ? requestAnimationFrame : (f: () => void) => setTimeout(f, 16);
  const step = (left: number) => {
    if (!attempt() && left > 1) next(() => step(left - 1));
  };
  next(() => step(tries));
}
