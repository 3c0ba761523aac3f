"""A benchmark definition's fields, declared once.

Three models hold a definition, each derived from DefinitionFields and adding
only what it carries beside these fields: the item an adapter yields and
runs/ingest.py stores (records.sources.base.DefinitionItem), a dump's
definitions.jsonl.gz line (records.sources.dump.DefinitionLine, camelCase and
checked strictly) and the API's body (api.schemas.Definition, camelCase, with
its cases as the page shows them and its comparison groups).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class DefinitionFields(BaseModel):
    """What every layer that holds a definition says of it.

    It sets no model_config: pydantic lets a later base's config override an
    earlier one's, and each derived model keeps its own base's (a dump line's
    strictness, the API's camelCase).
    """

    source: str
    name: str
    external_id: str
    title: str
    description: str
    subset: str
    axes: dict[str, Any]
    inputs: dict[str, Any]
    outputs: dict[str, Any]
