"""The lexical leg's terms: case-folded words of the query, stop words dropped; each backend quotes them its own way."""

from __future__ import annotations

import re

from memcastle.model.scripts import split_word

# Function words that carry no topic; dropping them keeps BM25 from rewarding chatter.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves s t d ll m re ve did does doing
    """.split()
)

_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """Case-folded words of `text`, stop words removed unless nothing else remains; order kept, no repeats. A run of
    characters of a script written without spaces (Chinese, Japanese, Thai, …) becomes its overlapping pairs of
    characters (`memcastle.model.scripts`)."""
    words = [part for w in _WORD.findall(text) for part in split_word(w.casefold())]
    words = [w.strip("_") for w in words if w.strip("_")]
    content = [w for w in words if w not in STOP_WORDS]
    return list(dict.fromkeys(content or words))
