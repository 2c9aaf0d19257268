// The one way the page writes a moment for a person: 24-hour time with its
// zone named ("19:30:19 CET"), and the date before it when it is not today
// ("2 Dec 2026, 19:30:19 CET"), in the browser's zone. The kernel's own texts
// (the approval link's page, a refused link) write the server's time the same
// way (nb_hitl.agui.ids.readable_time), so a card never mixes 12- and
// 24-hour forms.

const TIME: Intl.DateTimeFormatOptions = { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short" };
const DATE: Intl.DateTimeFormatOptions = { day: "numeric", month: "short", year: "numeric" };

/**
 * `epochSeconds` (seconds since 1970, as `time.time()` gives) as a person reads it.
 *
 * @param epochSeconds the moment, in seconds.
 * @param now the current moment in seconds (default: the clock's), which decides whether the date is shown.
 * @param timeZone an IANA zone to write it in (default: the browser's).
 * @returns "19:30:19 CET", or "2 Dec 2026, 19:30:19 CET" on another day; "" for a moment that is not a finite number.
 */
export function clockTime(epochSeconds: number, now: number = Date.now() / 1000, timeZone?: string): string {
  if (!Number.isFinite(epochSeconds)) return "";
  const at = new Date(epochSeconds * 1000);
  const zone = timeZone ? { timeZone } : {};
  // fixed locales: the day as the kernel writes it ("2 Dec 2026"), the time with its zone's short name
  // ("EST"; "GMT+1" where English has none): the form never depends on the browser's language
  const day = (d: Date) => new Intl.DateTimeFormat("en-GB", { ...DATE, ...zone }).format(d);
  const time = new Intl.DateTimeFormat("en-US", { ...TIME, ...zone }).format(at);
  return day(at) === day(new Date(now * 1000)) ? time : `${day(at)}, ${time}`;
}
