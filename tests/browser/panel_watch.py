"""When a student's page first shows a step, noted in the page itself: the class tests (test_class_following.py,
test_lecture_hall.py) time a press on the presenter's page to the moment each student's class panel says the new
step, checked on every change of the page's content (a MutationObserver), so the time is when the step is in the
page, not when a machine busy with several browsers and app processes gets round to painting it.

One watch per page: a new watch disconnects the page's last one, and a watch stops once it has matched. The panel
keeps changing while it shows a step (its fragment reruns every half second), so a watch left over from the step
before, still matching it, would otherwise stamp the new watch at once: the next step would seem to show before
the presenter pressed."""
from __future__ import annotations

from browser_support import wait_until

WATCH = """([pattern, path]) => {
    if (window.panelWatch) window.panelWatch.disconnect();
    window.panelSeenAt = null;
    const re = new RegExp(pattern);
    const observer = new MutationObserver(() => check());
    const check = () => {
        const panel = document.querySelector('.st-key-class_panel');
        const here = path === null || location.pathname.replace(/\\/$/, '') === path;
        if (window.panelWatch === observer && here && panel && re.test(panel.textContent)) {
            window.panelSeenAt = Date.now();
            observer.disconnect();
        }
    };
    window.panelWatch = observer;
    observer.observe(document.body, {childList: true, subtree: true, characterData: true});
    check();
}"""
SEEN = "() => window.panelSeenAt !== null"


def watch_panel(page, pattern: str, path: str | None = None) -> None:
    """From now on, note the wall-clock time the page's class panel (`.st-key-class_panel`) first matches `pattern`
    (a JavaScript regular expression) while the address is `path` ("" for the default page; None: any page)."""
    page.evaluate(WATCH, [pattern, path])


def panel_seen_at(page) -> float | None:
    """Seconds since the epoch (the browser's clock, this machine's) when the page's watch matched; None until then."""
    seen = page.evaluate("() => window.panelSeenAt")
    return None if seen is None else seen / 1000


def wait_until_seen(page, timeout_s: float) -> float:
    """Wait for the page's watch to match (playwright's TimeoutError after `timeout_s`); when it matched."""
    wait_until(page, SEEN, timeout=timeout_s * 1000)
    return panel_seen_at(page)
