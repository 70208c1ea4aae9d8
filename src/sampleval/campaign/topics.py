"""TREC topic statements: title, description and narrative per topic id.

Two layouts (plain or gzipped):

- XML, as TREC-COVID writes it: ``<topic number="1">`` with ``<query>`` (the title),
  ``<question>`` (the description) and ``<narrative>``; ``<title>``, ``<description>`` and
  ``<narrative>`` children (and a ``number`` or ``id`` attribute or child) work too;
- the classic SGML of the ad hoc tracks: ``<top>`` records with ``<num> Number: 301``,
  ``<title>``, ``<desc> Description:`` and ``<narr> Narrative:``, each field running to the
  next tag;
- SMART queries, as Cranfield's ``cran.qry`` (``.I`` then ``.W``): each query is its topic's
  title, and topics are numbered by their position in the file, 1, 2, 3, ..., as
  ``cranqrel`` numbers them (the ``.I`` numbers run 001, 002, 004, ... with gaps; the
  description names the original one).
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from sampleval.errors import InputError

_FIELDS = {"title": ("query", "title"), "description": ("question", "description", "desc"),
           "narrative": ("narrative", "narr")}
_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:/?top|num|title|desc|narr)>|$)",
                    re.S | re.I)
_LEAD = re.compile(r"^\s*(Number|Topic|Description|Narrative)\s*:", re.I)


@dataclass(frozen=True)
class Statement:
    """One topic as the assessor reads it."""

    topic: str
    title: str = ""
    description: str = ""
    narrative: str = ""


def read_topics(path: str | PathLike[str]) -> dict[str, Statement]:
    """The statements of a topics file, by topic id (see the module docstring)."""
    source = Path(path)
    try:
        raw = source.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as exc:
        raise InputError(source, None, f"cannot read the topics: {exc}") from None
    text = raw.decode("utf-8", errors="replace")
    if text.lstrip().startswith(".I"):
        topics = _smart(source, text)
    else:
        topics = _sgml(source, text) if _TOP.search(text) else _xml(source, text)
    if not topics:
        raise InputError(source, None, "no topics found (expected <topic> or <top> records, "
                                       "or SMART '.I' queries)")
    return topics


def _squeeze(text: str | None) -> str:
    return " ".join((text or "").split())


def _xml(path: Path, text: str) -> dict[str, Statement]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(path, exc.position[0], f"not XML: {exc}") from None
    out: dict[str, Statement] = {}
    for element in root.iter("topic"):
        number = element.get("number") or element.get("id") or _squeeze(
            element.findtext("number") or element.findtext("id"))
        if not number:
            raise InputError(path, None, "a <topic> has no number")
        fields = {name: next((_squeeze(element.findtext(tag)) for tag in tags
                              if element.find(tag) is not None), "")
                  for name, tags in _FIELDS.items()}
        out[number.strip()] = Statement(number.strip(), **fields)
    return out


def _sgml(path: Path, text: str) -> dict[str, Statement]:
    out: dict[str, Statement] = {}
    for match in _TOP.finditer(text):
        fields = {tag.lower(): _squeeze(_LEAD.sub("", value))
                  for tag, value in _FIELD.findall(match.group(1))}
        number = fields.get("num", "")
        if not number:
            line = text.count("\n", 0, match.start()) + 1
            raise InputError(path, line, "a <top> has no <num>")
        out[number] = Statement(number, fields.get("title", ""), fields.get("desc", ""),
                                fields.get("narr", ""))
    return out


def _smart(path: Path, text: str) -> dict[str, Statement]:
    from sampleval.datasets.cranfield import queries_frame

    frame = queries_frame(path, text.splitlines())
    return {qid: Statement(qid, query, f"(query .I {original} of {path.name})")
            for qid, original, query in zip(frame["query_id"], frame["original_id"],
                                            frame["text"], strict=True)}
