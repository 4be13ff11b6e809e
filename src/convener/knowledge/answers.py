"""Grounded answers from retrieved passages.

Offline (no model configured) the answer is extractive: sentences of the passages, copied verbatim and
traceable to a byte range of a referenced document, with an honest "not found" when no page supports
enough of the question. The pages of the passages compete: each question word weighs its rarity over the
whole index (``Evidence``), so a question about something the documentation never mentions ("Kubernetes
ingress") finds its rarest words uncovered and is not answered from a passage that only shares the filler;
a page's support is the weighted share of the question its passages and title hold, and an answer also needs
one sentence that holds much of it; a question naming a product or tool the documentation never mentions, or
only in passing elsewhere than the page the answer rests on, is not answered (``scope``), and one that names
nothing but the documentation's own subject needs less support, being put in the user's words. Words of how
the question is put ("I'm actually trying…") weigh nothing. The best page (with the best single sentence
counting) is quoted first and referenced first; the next two are quoted too when they score nearly as
well, since lexical ranking often puts the page that answers second or third; words of the question no page
uses are named after the quotes.

With a model, the answer is generated from the numbered passages and then checked: every sentence must be
supported by one passage (most of its words found there), unsupported sentences are dropped, and if none
survive the extractive answer is given instead.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from convener.api.errors import ApiError
from convener.knowledge.models import Citation, CitationSource
from convener.knowledge.scope import names, names_elsewhere
from convener.knowledge.text import STOPWORDS, sentences, stem, stems, words
from convener.llm.base import ChatMessage, ModelProvider

OFFLINE_NOTE = ("Offline extractive answer (no language model is configured): the sentences below are quoted "
                "verbatim from the referenced documents.")
NOT_FOUND = "Not found in the indexed documentation: no passage supports an answer to this question."
MAX_SENTENCES = 3
MIN_COVERAGE = 0.54
"""How much of the question (rarity-weighted) an answer must rest on: the best page's support, blended with
the best single sentence's share (``SENTENCE_SHARE``). Set on every question of ``benchmarks/knowledge_gold/``
(310 answerable, 45 out of scope), as the lowest that leaves at most two out-of-scope questions answered."""
MIN_COVERAGE_UNNAMED = 0.46
"""The same for a question that names nothing but what the documentation uses everywhere (``scope``): it asks
about the documentation's own subject, in the user's words, which pages word differently, so it rests on less
("my work is half done, where can I park it?"). Out-of-scope questions nearly all name another product: 9 of
the 73 of ``benchmarks/knowledge_gold/`` name nothing else, and lowering their bar from 0.54 to 0.46 answers
one more of the 73, while 26 more of the 425 answerable questions are answered (16 of them referencing a
relevant page)."""
SENTENCE_SHARE = 0.25
"""A page that holds the question's words scattered over sections ("GitHub" here, "account" there) supports it
less than one sentence that holds them together: out of scope questions about a neighbouring product find the
first, answerable ones usually the second."""
UNSUPPORTED_NOTE = "\n\nNot supported by these passages: "
"""Ends an answer that rests on only part of the question, naming the question's words it could not support."""
# How a page's support and score are made (weights chosen on the same tuning questions):
TITLE_WEIGHT = 0.6
"""A page whose title names the question's words ranks higher ("Tcl interface" for "SQLite from Tcl")..."""
TITLE_SUPPORT = 0.7
"""...and counts as supporting more of the question: its every passage is about what the title says."""
SIMILARITY_WEIGHT = 0.3
"""With embeddings, a page's closest passage's cosine to the question adds this much of itself to its rank (on
every question of ``benchmarks/knowledge_gold/`` up to round 7, both corpora embedded: references holding a
relevant page 75.2% -> 75.9% with it alone; 0.6 did about the same)..."""
SIMILARITY_SUPPORT = 1.0
"""...but its excess over ``SIMILARITY_BASE`` adds to the page's support: a passage that says the same in other
words supports the question though it shares few of its words (set on git-doc's tuning questions alone: the
SQLite set was not embedded)."""
SIMILARITY_BASE = 0.5
SUMMARY_WEIGHT = 0.4
"""With embeddings, a page's summary's cosine to the question adds this much of itself to its rank: a manual
page's one-line description ("git-worktree - Manage multiple working trees") says what a task-worded question
asks ("two branches checked out at the same time") in words none of its passages share (same questions:
75.9% -> 77.3% references holding a relevant page, the first one 57.1% -> 58.2%; 0.6 and 0.8 did no better)."""
PASSAGE_SHARE = 0.5
"""Support is this share of the best passage's coverage plus the rest of all the page's passages' together:
a focused passage beats words scattered over a long page, yet a page that holds everything counts."""
RANK_WEIGHT = 0.3
"""Retrieval's order still counts, as 1 / (1 + the page's first rank)."""
SENTENCE_WEIGHT = 0.3
"""A page's best sentence's share of the question adds this much to its rank: the page that can be quoted
saying most of the answer in one sentence is the one to reference first (tuning questions: references
holding a relevant page 71.5% -> 73.0% on git-doc, the first one 52.5% -> 53.2% on sqlite3-doc; 0.2 and 0.4
did about as well, 0.8 lost sqlite3-doc references)."""
OTHER_PAGE_FACTOR = 0.5
"""Sentences of the next two pages are worth this much of the best page's: quoted only for what it lacks."""
MIN_GAIN = 0.05
"""A further sentence must add this share of the question."""
ALTERNATIVES = 2
"""Pages after the best one that may each add their best sentence, as alternatives..."""
ALTERNATIVE_SCORE = 0.6
"""...when their score is at least this share of the best page's: lexical ranking puts the page that answers
first for only about half of the questions, but among the first three for four in five (tuning questions of
``benchmarks/knowledge_gold/``), so when pages score alike the answer quotes each rather than bet on one."""
MIN_MISSING = 0.1
"""A missing word is named when it weighs at least this share of the question."""
MIN_SUPPORT = 0.7
"""Share of a generated sentence's words one passage must contain for the sentence to be kept."""
QUESTION_FILLER = frozenset(stem(word) for word in (
    "i'm", "i've", "i'd", "i'll", "we're", "we've", "we'd", "we'll", "you're", "you've", "they're", "there's",
    "here's", "where's", "how's", "who's", "actually", "really", "quite", "rather", "somewhat", "simply",
    "basically", "currently", "already", "still", "even", "ever", "anyway", "anywhere", "somewhere",
    "everywhere", "elsewhere", "somehow", "perhaps", "maybe", "probably", "possibly", "especially",
    "particular", "particularly", "certain", "exactly", "quickly", "easily", "instead", "otherwise", "anymore",
    "everything", "nothing", "anyone", "everyone", "somebody", "anybody", "thing", "things", "stuff", "lot",
    "lots", "bunch", "various", "several", "whole", "entire", "mine", "ours", "need", "needs", "try", "trying",
    "able", "possible", "happen", "happens", "seem", "seems", "going", "know", "tell"))
"""Words of how a question is put rather than what it asks ("I'm actually trying to…"): the answer does not
weigh them. They are rare in technical pages, so their rarity would otherwise make them count the most."""
_MIN_WORDS = 4
_MAX_SENTENCE_CHARACTERS = 600
_CITATION_MARK = re.compile(r"\s*\[(\d{1,2})\]")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Passage:
    document: str
    """The document's name."""
    content: str
    start_byte: int
    """Where ``content`` begins in the document's UTF-8 content."""
    heading: str = ""
    """The chunk's title and section path: what its sentences are about, though they need not repeat it."""
    similarity: float | None = None
    """The cosine of the chunk's embedding to the question's, when the index has vectors."""
    summary_similarity: float | None = None
    """The cosine of the document's summary (its title, and its description where that says more) to the
    question, when the index has vectors: what the whole page is about, which its passages may not say."""


@dataclass(frozen=True)
class Answer:
    text: str
    references: list[str]
    citations: list[Citation]
    supported: bool


@dataclass(frozen=True)
class _Sentence:
    passage: int
    start: int
    end: int
    text: str
    stems: frozenset[str]
    """The sentence's words, with the words of its passage's heading and of the section heading above it:
    "The default is 50 GB." under "Storage quota" answers a question about the storage quota."""


@dataclass(frozen=True)
class Evidence:
    """What the whole index says about a question, beside the passages retrieved for it."""

    rarity: Mapping[str, float]
    """Stem of each question word -> its inverse document frequency over every chunk of the index: a word no
    page uses weighs most, so "MongoDB" in a question about a SQLite manual must be covered for an answer."""
    absent: frozenset[str] = frozenset()
    """Stems of the question's words that no chunk of the index holds."""
    common: frozenset[str] = frozenset()
    """Stems of the question's words that the index's chunks hold everywhere (at least the number a word's
    rarity is counted up to): the documentation's own subject, such as "Git" in Git's manual."""
    unheld: tuple[tuple[str, ...], ...] = ()
    """The question's names of several words ("GitHub Actions", ``scope.name_runs``; "git-flow" where the
    documentation names its own things "git-…", ``scope.FAMILY_SIZE``) that no chunk holds together: each word
    may be in the documentation ("GitHub" in a page on sending patches, "actions" everywhere), the thing they
    name is not."""


def extractive_answer(query: str, passages: Sequence[Passage], evidence: Evidence | None = None) -> Answer:
    candidates = _candidates(passages)
    wanted = {term for term in _content_stems(query) if term not in QUESTION_FILLER}
    if not wanted or not candidates:
        return _not_found()
    weight = _weights(wanted, candidates, evidence)
    total = sum(weight.values())
    ranking = _documents(passages, candidates, wanted, weight, total, evidence)
    best = ranking[0]
    closest = max(sum(weight[t] for t in sentence.stems & wanted) for sentence in candidates) / total
    named = names(query) & wanted
    unnamed = evidence is not None and named <= evidence.common
    if (1 - SENTENCE_SHARE) * best.support + SENTENCE_SHARE * closest < (
            MIN_COVERAGE_UNNAMED if unnamed else MIN_COVERAGE):
        return _not_found()
    if evidence is not None and names_elsewhere(named, evidence.absent, evidence.rarity, best.stems):
        return _not_found()
    if evidence is not None and evidence.unheld:
        return _not_found()
    # Sentences of the best-supported page first; others only for words that page does not cover.
    preference = {doc.name: (1.0 if index == 0 else OTHER_PAGE_FACTOR) for index, doc in enumerate(ranking[:3])}
    chosen: list[_Sentence] = []
    covered: set[str] = set()
    while len(chosen) < MAX_SENTENCES:
        choice, choice_gain = None, 0.0
        for sentence in candidates:
            factor = preference.get(passages[sentence.passage].document, 0.0)
            if sentence in chosen or not factor or (not chosen and factor < 1.0):
                continue
            gain = sum(weight[t] for t in (sentence.stems & wanted) - covered) / total * factor
            # Earlier passages rank higher: a small preference settles near-ties in their favour.
            gain += 0.05 / (1 + sentence.passage) if gain else 0.0
            if gain > choice_gain:
                choice, choice_gain = sentence, gain
        if choice is None or (chosen and choice_gain < MIN_GAIN):
            break
        chosen.append(choice)
        covered |= choice.stems & wanted
    if not chosen:
        return _not_found()
    chosen += _alternatives(ranking, candidates, passages, chosen, wanted, weight)
    order = {doc.name: index for index, doc in enumerate(ranking)}
    chosen.sort(key=lambda s: (order[passages[s.passage].document], s.passage, s.start))
    answer = _compose(OFFLINE_NOTE + "\n\n", [(s.text, [s]) for s in chosen], passages)
    # Words the documentation never uses (not filler it merely words differently), and that weigh enough
    # to change what the question asks: the part of it this answer does not rest on.
    seen = set().union(*(document.stems for document in ranking))
    absent = evidence.absent if evidence is not None else frozenset()
    missing = [word for word, term in _question_words(query).items()
               if term in wanted and term in absent and term not in seen and "'" not in word
               and weight[term] / total >= MIN_MISSING]
    if missing:
        return Answer(answer.text + UNSUPPORTED_NOTE + ", ".join(f'"{word}"' for word in missing) + ".",
                      answer.references, answer.citations, True)
    return answer


@dataclass(frozen=True)
class _Document:
    name: str
    score: float
    support: float
    """The rarity-weighted share of the question's words the page's passages hold (with their headings): its
    best passage's share and all of its passages' together, averaged."""
    stems: frozenset[str]


def _alternatives(ranking: Sequence[_Document], candidates: Sequence[_Sentence], passages: Sequence[Passage],
                  chosen: Sequence[_Sentence], wanted: set[str], weight: Mapping[str, float]) -> list[_Sentence]:
    """The best sentence of each of the next ``ALTERNATIVES`` pages that scores close to the best page and is
    not quoted yet: the sentence holding most of the question, the earliest passage's on a tie."""
    quoted = {passages[sentence.passage].document for sentence in chosen}
    added = []
    for document in ranking[1:1 + ALTERNATIVES]:
        if document.name in quoted or document.score < ALTERNATIVE_SCORE * ranking[0].score:
            continue
        own = [s for s in candidates if passages[s.passage].document == document.name]
        best = max(own, key=lambda s: (sum(weight[t] for t in s.stems & wanted), -s.passage, -s.start), default=None)
        if best is not None and best.stems & wanted:
            added.append(best)
    return added


def _weights(wanted: set[str], candidates: Sequence[_Sentence], evidence: Evidence | None) -> dict[str, float]:
    if evidence is not None and evidence.rarity:
        top = max(evidence.rarity.values())
        return {term: evidence.rarity.get(term, top) for term in wanted}
    frequency = {term: sum(term in sentence.stems for sentence in candidates) for term in wanted}
    return {term: math.log(1 + len(candidates) / (1 + frequency[term])) for term in wanted}


def _documents(passages: Sequence[Passage], candidates: Sequence[_Sentence], wanted: set[str],
               weight: Mapping[str, float], total: float, evidence: Evidence | None) -> list[_Document]:
    """The pages of the passages, best first: how much of the question they cover, whether their title names
    it, how much of it their best sentence holds, and how high retrieval ranked them."""
    held: dict[int, set[str]] = {index: stems(passage.heading) & wanted for index, passage in enumerate(passages)}
    quotable: dict[str, float] = {}  # each page's best sentence's share of the question
    for sentence in candidates:
        held[sentence.passage].update(sentence.stems & wanted)
        document = passages[sentence.passage].document
        share = sum(weight[t] for t in sentence.stems & wanted) / total
        quotable[document] = max(quotable.get(document, 0.0), share)
    pages: dict[str, tuple[int, float, set[str]]] = {}  # first rank, best passage's support, words held
    closeness: dict[str, float] = {}
    summaries: dict[str, float] = {}
    for index, passage in enumerate(passages):
        support = sum(weight[t] for t in held[index]) / total
        rank, best, terms = pages.get(passage.document, (index, 0.0, set()))
        pages[passage.document] = (rank, max(best, support), terms | held[index])
        if passage.similarity is not None:
            closeness[passage.document] = max(closeness.get(passage.document, -1.0), passage.similarity)
        if passage.summary_similarity is not None:
            summaries[passage.document] = passage.summary_similarity
    titles = {passage.document: stems(passage.heading.split(" › ")[0]) for passage in reversed(passages)}
    found = []
    for name, (rank, support, terms) in pages.items():
        title = sum(weight[t] for t in titles[name] & wanted) / total
        union = sum(weight[t] for t in terms) / total
        support = PASSAGE_SHARE * support + (1 - PASSAGE_SHARE) * union + TITLE_SUPPORT * title
        score = (support + TITLE_WEIGHT * title + RANK_WEIGHT / (1 + rank)
                 + SENTENCE_WEIGHT * quotable.get(name, 0.0))
        if name in closeness:
            score += SIMILARITY_WEIGHT * closeness[name]
            support += SIMILARITY_SUPPORT * (closeness[name] - SIMILARITY_BASE)
        score += SUMMARY_WEIGHT * summaries.get(name, 0.0)
        found.append(_Document(name, score, support, frozenset(terms)))
    found.sort(key=lambda d: (-d.score, pages[d.name][0]))
    return found


def _question_words(query: str) -> dict[str, str]:
    """Each content word of the question, as written, with its stem."""
    return {word: stem(word) for word in words(query) if word not in STOPWORDS and len(word) > 1}


def generated_answer(provider: ModelProvider, query: str, passages: Sequence[Passage]) -> Answer | None:
    """A model's answer with its unsupported sentences dropped; None when the model fails or nothing it said
    is supported (the caller answers extractively then)."""
    numbered = "\n\n".join(f"[{index + 1}] ({p.document})\n{p.content}" for index, p in enumerate(passages))
    messages = [
        ChatMessage("system", "Answer the developer's question using only the numbered documentation passages. "
                              "Write short plain sentences and put the number of the passage that supports each "
                              "sentence after it, like [2]. If the passages do not answer the question, reply "
                              "NOT_FOUND."),
        ChatMessage("user", f"Passages:\n\n{numbered}\n\nQuestion: {query}"),
    ]
    try:
        completion = provider.complete(messages, temperature=0.0)
    except ApiError:
        return None
    text = (completion.text or "").strip()
    if not text or "NOT_FOUND" in text:
        return None
    pool = _candidates(passages)
    kept: list[tuple[str, list[_Sentence]]] = []
    for start, end in sentences(text):
        raw = text[start:end]
        cited = {int(number) - 1 for number in _CITATION_MARK.findall(raw)}
        clean = _CITATION_MARK.sub("", raw).strip()
        support = _support(clean, pool, cited)
        if support:
            kept.append((clean, support))
    if not kept:
        return None
    return _compose("", kept, passages)


def _support(sentence: str, pool: Sequence[_Sentence], cited: set[int]) -> list[_Sentence]:
    """The passage sentences that together hold most of ``sentence``'s words, all from one passage (a cited
    one first); empty when no passage does."""
    needed = _content_stems(sentence)
    if not needed:
        return []
    by_passage: dict[int, list[_Sentence]] = {}
    for candidate in pool:
        by_passage.setdefault(candidate.passage, []).append(candidate)
    for passage in sorted(by_passage, key=lambda p: (p not in cited, p)):
        found = set().union(*(c.stems for c in by_passage[passage])) & needed
        if len(found) / len(needed) >= MIN_SUPPORT:
            return sorted((c for c in by_passage[passage] if c.stems & needed),
                          key=lambda c: -len(c.stems & needed))[:2]
    return []


def _candidates(passages: Sequence[Passage]) -> list[_Sentence]:
    return [_Sentence(index, start, end, text, terms) for index, passage in enumerate(passages)
            for start, end, text, terms in _quotable(passage.content, passage.heading)]


@functools.lru_cache(maxsize=2048)
def _quotable(content: str, heading: str) -> tuple[tuple[int, int, str, frozenset[str]], ...]:
    """The sentences of a chunk worth quoting, with their words and their headings'. Cached: the same chunks
    come back for neighbouring questions, and cutting and stemming them is most of an answer's cost."""
    context = stems(heading)
    headings = [(match.start(), stems(match.group(1))) for match in _HEADING.finditer(content)]
    found = []
    for start, end in sentences(content):
        text = content[start:end]
        if len(text) <= _MAX_SENTENCE_CHARACTERS and len(words(text)) >= _MIN_WORDS:
            section = next((words for at, words in reversed(headings) if at < start), set())
            found.append((start, end, text, frozenset(stems(text) | context | section)))
    return tuple(found)


def _content_stems(text: str) -> set[str]:
    return {s for s in stems(text) if len(s) > 1}


def _compose(prefix: str, parts: Sequence[tuple[str, Sequence[_Sentence]]], passages: Sequence[Passage]) -> Answer:
    text = prefix
    citations: list[Citation] = []
    references: list[str] = []
    for index, (sentence, sources) in enumerate(parts):
        if index:
            text += " "
        start = len(text.encode())
        text += sentence
        cited = []
        for source in sources:
            passage = passages[source.passage]
            begin = passage.start_byte + len(passage.content[:source.start].encode())
            cited.append(CitationSource(document=passage.document, start_byte=begin,
                                        end_byte=begin + len(source.text.encode())))
            if passage.document not in references:
                references.append(passage.document)
        citations.append(Citation(start_byte=start, end_byte=len(text.encode()), sources=cited))
    return Answer(text, references, citations, True)


def _not_found() -> Answer:
    return Answer(NOT_FOUND, [], [], False)
