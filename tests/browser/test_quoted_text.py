"""A visitor's text never becomes a link, an image or an element (Chromium + Playwright, tests/browser/conftest.py):
a causal-tracing answer from a link, the circuits page's own answer and foil from a link (quoted by the library's
error), One word, many contexts' word and sentences, and a lesson file's title and about, each holding Markdown,
HTML, a bare address, a "www." address and an e-mail address. On the page there is no `<a>`, `<img>` or other element
made from them, and the browser asks nothing of their addresses (every request is recorded with a route, and theirs
refused).

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_quoted_text.py -q
"""
from __future__ import annotations

from urllib.parse import urlencode, urlparse

from browser_support import SLOW, new_page, page_errors, screenshot, settle

HOST = "127.0.0.1:9"  # the discard port: nothing answers there
HOSTILE = (f"[clickme](http://{HOST}/login) <img src=http://{HOST}/tag.png> http://{HOST}/bare "
           f"![i](http://{HOST}/beacon.png) <b>bold</b> www.{HOST.split(':')[0]}.nip.io/w mail@inside-bert.example.org")
MARKERS = (HOST + "/", "nip.io", "inside-bert.example.org")
HOSTS = (HOST, ".nip.io", ".example.org")  # their addresses' hosts (a request's, not its query, which quotes them)


def watched_page(browser):
    """(page, errors, requests): a new page whose every request to one of HOSTS is recorded and refused."""
    page = new_page(browser)
    errors = page_errors(page)
    requests: list[str] = []

    def route(route):
        host = urlparse(route.request.url).netloc
        if host == HOST or host.endswith(HOSTS[1:]):
            requests.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", route)
    return page, errors, requests


def made_from_hostile(page) -> list[str]:
    """The links, images and bold elements on the page that come from the hostile text."""
    return page.evaluate(
        """(markers) => Array.from(document.querySelectorAll('a, img, b, [src], [href]'))
            .filter(e => markers.some(m => (e.getAttribute('href') || '').includes(m) || (e.getAttribute('src') || '').includes(m))
                         || (e.tagName === 'B' && e.textContent === 'bold') || (e.tagName === 'A' && e.textContent.includes('clickme')))
            .map(e => e.outerHTML.slice(0, 200))""", list(MARKERS))


def check(page, errors, requests, name: str) -> None:
    screenshot(page, name)
    assert page.get_by_text("clickme", exact=False).count() >= 1, "the text is shown, as text"
    assert made_from_hostile(page) == []
    assert requests == [], requests
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors


def test_a_causal_tracing_answer_from_a_link_is_shown_as_text(browser, app_url):
    page, errors, requests = watched_page(browser)
    page.goto(app_url + "/causal_tracing?" + urlencode({"patch_answer": HOSTILE, "causal_mode": "two"}))
    page.get_by_role("heading", name="Causal tracing", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=0)
    check(page, errors, requests, "quoted_causal_tracing")
    page.context.close()


def test_the_circuits_pages_own_answer_and_foil_from_a_link_are_shown_as_text(browser, app_url):
    page, errors, requests = watched_page(browser)
    query = {"circuit_pair": "-1", "circuit_answer": HOSTILE, "circuit_foil": HOSTILE}
    page.goto(app_url + "/circuits?" + urlencode(query))
    page.get_by_text("is not one vocabulary token", exact=False).first.wait_for(timeout=SLOW)
    settle(page, charts=0)
    check(page, errors, requests, "quoted_circuits")
    page.context.close()


def test_one_word_many_contexts_shows_the_word_and_the_sentences_as_text(browser, app_url):
    page, errors, requests = watched_page(browser)
    sentences = f"I sat by the bank {HOSTILE}.\nThe bank was closed."
    page.goto(app_url + "/word_contexts?" + urlencode({"contexts_word": HOSTILE[:50], "contexts_sentences": sentences}))
    page.get_by_text("is not a word of sentence", exact=False).first.wait_for(timeout=SLOW)
    settle(page, charts=0)
    check(page, errors, requests, "quoted_word_contexts")
    page.context.close()


def test_a_lesson_files_title_and_about_make_no_link_and_no_image(browser, app_url, tmp_path):
    page, errors, requests = watched_page(browser)
    lesson = tmp_path / "hostile.yaml"
    quoted = HOSTILE.replace("'", "''")
    lesson.write_text(f"title: '{quoted}'\nabout: '{quoted}'\nsteps:\n  - title: '{quoted}'\n    text: 'Look here.'\n"
                      "    page: attention\n    state: {}\n", encoding="utf-8")
    page.goto(app_url + "/lessons?model=minilm")
    page.get_by_role("heading", name="Lessons", exact=True).wait_for(timeout=SLOW)
    page.get_by_role("combobox", name="Lesson").click()
    page.get_by_role("option", name="Your own lesson file (.yaml)…").click()
    page.locator("input[type=file]").set_input_files(str(lesson))
    page.get_by_text("Start the lesson").wait_for(timeout=SLOW)
    settle(page, charts=0)
    check(page, errors, requests, "quoted_lesson")
    page.context.close()
