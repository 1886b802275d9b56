"""Snippets under concurrent searches: every thread stems with stemmers of its own.

A Snowball stemmer keeps the word it is working on in itself; one pair shared by every thread made three
overlapping searches crash with an IndexError inside the English stemmer, and could give a word a wrong stem.
"""

from __future__ import annotations

import random
import sys
import threading
from typing import Any

import snowballstemmer

from memcastle.app import Palace
from memcastle.search import snippets
from memcastle.services import SearchRequest

THREADS = 16


def fresh_words(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    endings = ("ing", "ation", "ness", "ously", "ies", "ed", "ers", "izing", "fulness", "ational")
    stems = "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 5)))
    return [f"{stems}{rng.choice(endings)}{i}"[: -len(str(i))] for i in range(count)]


def run_together(work: Any) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def one(index: int) -> None:
        start.wait()
        try:
            work(index)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change hands inside a word's stemming, as on a busy machine
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    return errors


def test_sixteen_threads_stemming_fresh_words_get_the_stems_one_thread_gets() -> None:
    porter, english = snowballstemmer.stemmer("porter"), snowballstemmer.stemmer("english")
    words = [fresh_words(seed, 3000) for seed in range(THREADS)]
    expected = [[(porter.stemWord(w), english.stemWord(w)) for w in batch] for batch in words]
    snippets._stems.cache_clear()
    got: dict[int, list[tuple[str, str]]] = {}

    def stem(index: int) -> None:
        got[index] = [snippets._stems(word) for word in words[index]]

    assert run_together(stem) == []
    assert [got[i] for i in range(THREADS)] == expected


def test_sixteen_overlapping_searches_with_fresh_words_all_answer(palace: Palace) -> None:
    vocabulary = fresh_words(99, 400)
    for start in range(0, len(vocabulary), 20):
        palace.services.drawers.save_note(" ".join(vocabulary[start : start + 20]), wing="stems")
    snippets._stems.cache_clear()
    answers: dict[int, int] = {}

    def search(index: int) -> None:
        for round_ in range(5):
            words = " ".join(vocabulary[(index * 7 + round_ * 31 + k) % len(vocabulary)] for k in range(3))
            result = palace.services.search.search(SearchRequest(query=words, wing="stems", ranking="lexical"))
            answers[index] = answers.get(index, 0) + len(result.hits)

    assert run_together(search) == []
    assert all(answers[i] > 0 for i in range(THREADS))
