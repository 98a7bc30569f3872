"""Test data inside the gensim wheel: Lee news articles, review sentences, IMDB reviews, Wikipedia paragraphs and an
excerpt of a Wikipedia dump (wiki markup stripped)."""
from __future__ import annotations

import html
import re
from typing import Iterable, Iterator

from ..clean import detokenise, pack, prose_lines
from ..fetch import Fetcher, wheel_file
from ..source import Source

VERSION = "4.4.0"
GENSIM_DATA = "gensim/test/test_data/"


def _gensim_file(fetch: Fetcher, name: str) -> tuple[str, bytes]:
    return VERSION, wheel_file(fetch, "gensim", VERSION, GENSIM_DATA + name, any_platform=True)


def _gensim_paragraphs(*names: str):
    """An extractor of files with one paragraph a line, sentence-split and packed."""
    def extract(fetch: Fetcher) -> tuple[str, Iterable[str]]:
        lines: list[str] = []
        for name in names:
            _, data = _gensim_file(fetch, name)
            for para in data.decode("utf-8", "replace").splitlines():
                lines.extend(prose_lines(para))
        return VERSION, lines
    return extract


def _gensim_polarity(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "pang_lee_polarity.cor")
    out = []
    for ln in data.decode("utf-8", "replace").splitlines():
        ln = re.sub(r"^__label__\w+\s+", "", ln)
        ln = detokenise(ln)
        if ln:
            out.append(ln[0].upper() + ln[1:])
    return ver, out


def _gensim_imdb(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "alldata-id-10.txt")
    out = []
    for ln in data.decode("utf-8", "replace").splitlines():
        ln = re.sub(r"^_\*\d+\s+", "", ln)
        ln = re.sub(r"<br\s*/?>", " ", ln)
        ln = detokenise(ln)
        sents = [s[0].upper() + s[1:] for s in re.split(r"(?<=[.!?])\s+", ln) if s]
        out.extend(pack(sents))
    return ver, out


# ---- wikitext ---------------------------------------------------------------
def strip_wikitext(text: str) -> str:
    text = html.unescape(html.unescape(text))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<ref[^>/]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    text = re.sub(r"<(math|gallery|timeline|table|code|pre|source|syntaxhighlight)[^>]*>.*?</\1>", "",
                  text, flags=re.S | re.I)
    # nested templates {{...}} and tables {|...|}
    for _ in range(6):
        new = re.sub(r"\{\{[^{}]*\}\}", "", text)
        new = re.sub(r"\{\|[^{}]*?\|\}", "", new, flags=re.S)
        if new == text:
            break
        text = new
    # file/image/category links (may contain nested links)
    for _ in range(3):
        text = re.sub(r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]",
                      "", text, flags=re.I)
    text = re.sub(r"\[\[([^\]|]*)\|([^\]]*)\]\]", r"\2", text)
    text = re.sub(r"\[\[([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[https?://[^\s\]]+\s*([^\]]*)\]", r"\1", text)
    text = re.sub(r"'{2,}", "", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text


def _wiki_paragraphs(xml: str) -> Iterator[str]:
    for m in re.finditer(r"<text[^>]*>(.*?)</text>", xml, flags=re.S):
        body = m.group(1)
        if body.lstrip().upper().startswith("#REDIRECT"):
            continue
        body = strip_wikitext(body)
        for para in body.split("\n"):
            para = para.strip()
            if not para or para[0] in "=*#:;|!{}" or para.startswith("----"):
                continue
            yield para


def _gensim_enwiki(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    xml = data.decode("utf-8", "replace")  # wheel_file has undone the .bz2
    out = []
    for para in _wiki_paragraphs(xml):
        out.extend(prose_lines(para))
    return ver, out


SOURCES = [
    Source("gensim-lee", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Lee et al. 2005 news corpus (ABC)",
           "lee_background.cor + lee.cor: Australian news articles, sentence-split and packed.",
           _gensim_paragraphs("lee_background.cor", "lee.cor")),
    Source("gensim-polarity", "PyPI gensim (test data)",
           "LGPL-2.1 (gensim); Pang & Lee sentence polarity data (movie-review snippets)",
           "pang_lee_polarity.cor: lowercased review sentences, detokenised.", _gensim_polarity),
    Source("gensim-imdb", "PyPI gensim (test data)", "LGPL-2.1 (gensim); IMDB reviews (Maas et al. 2011)",
           "alldata-id-10.txt: 10 lowercased movie reviews, detokenised.", _gensim_imdb),
    Source("gensim-para2para", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Wikipedia text (CC BY-SA)",
           "para2para_text1/2.txt: encyclopedic paragraphs.",
           _gensim_paragraphs("para2para_text1.txt", "para2para_text2.txt")),
    Source("gensim-enwiki", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Wikipedia 2017 dump excerpt (CC BY-SA 3.0)",
           "enwiki-latest-pages-articles1...-shortened.bz2: wiki markup stripped, paragraphs "
           "sentence-split and packed.", _gensim_enwiki),
]
