"""The home page's search: what a query matches, most relevant first, each part newest first.

A query is matched in parts (runs.keyset.Part), read one after the other, so
that results come in order of relevance and then of date, and each part is
read from an index in its own order:

1. a run id, in full or as a prefix of at least 4 hex digits (the run id's
   unique index), or a source's own id for the run (source, external id); a
   query that is an id of runs that exist matches those runs alone;
2. the runs of a definition whose name or title is the query;
3. runs whose implementation's name is the query (a btree on its upper case);
4. runs whose implementation's author is the query (a btree on its upper case,
   holding only the runs that name an author);
5. the runs of definitions whose name or title contains it (the definitions
   are a few hundred rows; their runs come from the (definition, date) index);
6. runs whose implementation, project or author name contains it, for queries
   of 3 characters or more: on PostgreSQL through the trigram indexes of
   migrations 0007 and 0011, which serve Django's case-insensitive lookups;
   elsewhere a table scan.

A run is listed once, in the first part it matches. Nothing counts every match:
pages show a bounded count (runs.search.bounded_count).
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import CharField, Q, QuerySet, Value
from django.db.models.functions import Upper

from records.identity import RUN_ID_LENGTH
from records.sources import SOURCES
from runs.keyset import Part
from runs.models import AUTHORED, DISTINCT_PROJECT, NEWEST_KEYS, Definition, Run

# A shorter prefix of a run id matches too many runs to be what someone meant.
MIN_ID_PREFIX = 4
# A name fragment shorter than this is too common to search for inside names (and trigram indexes cannot).
MIN_FRAGMENT = 3
HEX = re.compile(r"[0-9a-f]+")
# Search results and lists show "more than" this many rather than counting further.
COUNT_BOUND = 1000
# A query matching up to this many definitions selects their runs by the definitions' ids, more by a subquery.
LISTED_DEFINITIONS = 20
# `name__upper__gte=...`: a name compared in upper case, as the btree run_implementation_upper holds it.
CharField.register_lookup(Upper)


def newest_parts() -> list[Part]:
    """An unsearched list: every run, newest first (the run_newest index)."""
    return [Part("newest", Q(), NEWEST_KEYS, descending=True)]


def normal_query(text: str) -> str:
    return " ".join(text.split())


def search_parts(text: str) -> list[Part]:
    """The parts a query matches, most relevant first; a run matched by an earlier part is left out of later ones."""
    query = normal_query(text)
    if not query:
        return newest_parts()
    by_id = _id_match(query)
    if _looks_like_id(query) and Run.objects.filter(by_id).exists():
        # An id that names runs is what was meant: not fragments of names that happen to hold those digits.
        return [Part("id", by_id, NEWEST_KEYS, descending=True)]
    matches = [
        ("id", by_id),
        ("definition", _definition_match(query, exact=True)),
        ("name", _exact_name(query)),
        ("author", _exact_author(query)),
        ("definition-partial", _definition_match(query, exact=False)),
    ]
    if len(query) >= MIN_FRAGMENT:
        # A project the same as the implementation's name is found through the name (models.DISTINCT_PROJECT).
        names = Q(implementation_name__icontains=query) | (DISTINCT_PROJECT & Q(project__icontains=query))
        matches.append(("name-partial", names | (AUTHORED & Q(author__icontains=query))))
    parts: list[Part] = []
    earlier = Q()
    for name, match in matches:
        if match is None:
            continue
        parts.append(Part(name, match & ~earlier if earlier else match, NEWEST_KEYS, descending=True))
        earlier |= match
    return parts


def _looks_like_id(query: str) -> bool:
    return bool(HEX.fullmatch(query.lower())) and MIN_ID_PREFIX <= len(query) <= RUN_ID_LENGTH


def _exact_name(query: str) -> Q:
    """An implementation named exactly the query, in any case, through the btree on UPPER(name).

    Not `iexact` (UPPER(name) = UPPER(query)): PostgreSQL costs that the same through the btree and the
    trigram index, and took the trigram one (60-100 ms for a one-letter query at 10^6 runs, against 0.1 ms).
    A closed range is the same match, and only a btree serves it.
    """
    upper = Upper(Value(query))
    return Q(implementation_name__upper__gte=upper, implementation_name__upper__lte=upper)


def _exact_author(query: str) -> Q:
    """An implementation whose author is exactly the query, in any case: a closed range on UPPER(author), as
    _exact_name, with the condition of the btree run_author_upper, which holds only the runs naming an author."""
    upper = Upper(Value(query))
    return AUTHORED & Q(author__upper__gte=upper, author__upper__lte=upper)


def _id_match(query: str) -> Q:
    lowered = query.lower()
    match = Q(source__in=list(SOURCES), external_id=query)
    if _looks_like_id(query):
        # A range, not LIKE: the run id's unique index serves it under any collation.
        match |= Q(run_id__gte=lowered, run_id__lt=lowered + "g")
    return match


def _definition_match(query: str, *, exact: bool) -> Q | None:
    """The runs of the definitions the query names (or, not `exact`, whose names contain it); None for none."""
    if exact:
        found = Definition.objects.filter(Q(name__iexact=query) | Q(title__iexact=query))
    else:
        found = Definition.objects.filter(Q(name__icontains=query) | Q(title__icontains=query)).exclude(
            Q(name__iexact=query) | Q(title__iexact=query)
        )
    ids = list(found.values_list("pk", flat=True)[: LISTED_DEFINITIONS + 1])
    if not ids:
        return None
    if len(ids) <= LISTED_DEFINITIONS:
        # The ids themselves: PostgreSQL then knows how many runs they hold, and counts a definition of 10^5
        # runs by walking the newest runs until the bound (2.5 ms) rather than reading all of its index (34 ms).
        return Q(definition_id__in=ids)
    # A subquery: a letter is in most of a few hundred definitions' names, and each query of a page would carry
    # (and have adapted, one by one) hundreds of parameters. So many definitions hold most runs: any order finds
    # the bound soon.
    return Q(definition_id__in=found.values("pk"))


def bounded_count(runs: QuerySet[Any], parts: list[Part], bound: int = COUNT_BOUND) -> tuple[int, bool]:
    """How many runs the parts hold, counting no further than `bound`: (count, whether there are more)."""
    counted = 0
    for part in parts:
        counted += runs.filter(part.where).order_by()[: bound + 1 - counted].count()
        if counted > bound:
            return bound, True
    return counted, False
