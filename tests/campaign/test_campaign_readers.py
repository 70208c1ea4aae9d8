"""Readers for campaigns: document texts (TREC SGML, JSON lines, SMART as Cranfield), TREC
topic statements (TREC-COVID's XML, the classic <top> SGML), and the label rules."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sampleval.campaign.corpus import MAX_TEXT, read_corpus
from sampleval.campaign.labels import Vote, choose, combine
from sampleval.campaign.topics import read_topics
from sampleval.errors import InputError

TREC = """<DOC>
<DOCNO> FT911-1 </DOCNO>
<HEADLINE>Markets &amp; <i>money</i></HEADLINE>
<TEXT>
First paragraph &lt;b&gt; with an entity.
</TEXT>
<TEXT>Second part.</TEXT>
</DOC>
<DOC><DOCNO>LA-2</DOCNO><BYLINE>By someone</BYLINE> Body without text tags.</DOC>
"""


def test_trec_sgml_documents(tmp_path: Path) -> None:
    path = tmp_path / "docs.sgml.gz"
    path.write_bytes(gzip.compress(TREC.encode()))
    docs = {d.docno: d for d in read_corpus(path)}
    assert set(docs) == {"FT911-1", "LA-2"}
    assert docs["FT911-1"].title == "Markets & money"
    assert docs["FT911-1"].text == "First paragraph <b> with an entity.\n\nSecond part."
    assert docs["LA-2"].title == "" and docs["LA-2"].text == "By someone Body without text tags."
    assert [d.docno for d in read_corpus(path, {"LA-2"})] == ["LA-2"]


def test_jsonl_documents_and_their_errors(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "title": "T", "text": "body"}\n\n'
                    '{"docno": 7, "contents": "' + "x" * (MAX_TEXT + 5) + '"}\n')
    docs = list(read_corpus(path))
    assert (docs[0].docno, docs[0].title, docs[0].text) == ("a", "T", "body")
    assert docs[1].docno == "7" and docs[1].text.endswith("characters]")
    assert len(docs[1].text) < MAX_TEXT + 100
    path.write_text('{"id": "a"}\n{"title": "no id"}\n')
    with pytest.raises(InputError, match=r"docs.jsonl:2: no document id"):
        list(read_corpus(path))
    path.write_text('{"id": "a"}\n{oops\n')
    with pytest.raises(InputError, match=r"docs.jsonl:2: not JSON"):
        list(read_corpus(path))
    path.write_text("plain words\n")
    with pytest.raises(InputError, match="not a corpus"):
        list(read_corpus(path))
    with pytest.raises(InputError, match="cannot read"):
        list(read_corpus(tmp_path / "missing.jsonl"))


def test_the_cranfield_smart_file(cranfield_dir: Path) -> None:
    docs = {d.docno: d for d in read_corpus(cranfield_dir / "cran.all.1400", {"1", "486"})}
    assert set(docs) == {"1", "486"}
    assert docs["1"].title.startswith("experimental investigation of the aerodynamics")
    assert "slipstream" in docs["1"].text


def test_cranfield_queries_as_topics_numbered_as_cranqrel(cranfield_dir: Path) -> None:
    """``cran.qry`` numbers its queries .I 001, 002, 004, ...; cranqrel (and so the runs)
    number them by position: topic 3 is the query ``.I 004`` (before: 'no topics found')."""
    topics = read_topics(cranfield_dir / "cran.qry")
    assert len(topics) == 225
    assert list(topics)[:4] == ["1", "2", "3", "4"]
    assert topics["3"].title.startswith("what problems of heat conduction in composite slabs")
    assert topics["3"].description == "(query .I 004 of cran.qry)"
    assert topics["1"].title.startswith("what similarity laws must be obeyed")


def test_trec_covid_topics(covid: Path) -> None:
    topics = read_topics(covid.parent / "trec-covid" / "topics.covid-round5.xml")
    assert len(topics) == 50
    assert topics["1"].title == "coronavirus origin"
    assert topics["1"].description == "what is the origin of COVID-19"
    assert topics["1"].narrative.startswith("seeking range of information")


def test_classic_topics_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "topics.301-302"
    path.write_text("<top>\n<num> Number: 301\n<title> International Organized Crime\n"
                    "<desc> Description:\nIdentify organizations.\n<narr> Narrative:\n"
                    "A relevant document must name one.\n</top>\n"
                    "<top><num> Number: 302 <title> Poliomyelitis</top>\n")
    topics = read_topics(path)
    assert topics["301"].title == "International Organized Crime"
    assert topics["301"].description == "Identify organizations."
    assert topics["301"].narrative == "A relevant document must name one."
    assert topics["302"].title == "Poliomyelitis" and topics["302"].narrative == ""
    path.write_text("<topics><topic><query>q</query></topic></topics>")
    with pytest.raises(InputError, match="no number"):
        read_topics(path)
    path.write_text("<topics><topic number='1'>")
    with pytest.raises(InputError, match="not XML"):
        read_topics(path)


def test_label_rules() -> None:
    votes = [Vote("ann", 2.0, 1), Vote("ben", 0.0, 2), Vote("ann", 1.0, 3),
             Vote("cat", 0.0, 4)]
    assert combine(votes, "latest") == 0.0
    assert combine(votes, "majority") == 0.0  # ann's latest 1, ben 0, cat 0
    assert combine(votes, "mean") == pytest.approx(1 / 3)
    assert combine(votes, "ann") == 1.0 and combine(votes, "dan") is None
    tie = [Vote("ann", 2.0, 1), Vote("ben", 1.0, 2)]
    assert combine(tie, "majority") == 1.0  # a tie goes to the most recent vote
    labels, fallback = choose({"d1": tie, "d2": [Vote("ben", 0.0, 3)]}, "ann")
    assert labels == {"d1": 2.0, "d2": 0.0} and fallback == 1
    assert combine([], "latest") is None
