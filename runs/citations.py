"""How to cite a run: permalink, digest and access date, as BibTeX, CSL-JSON and plain text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Citation:
    run_id: str
    title: str
    author: str
    permalink: str
    digest: str
    published: date
    accessed: date

    @property
    def key(self) -> str:
        return f"kernelindex-{self.run_id}"

    def bibtex(self) -> str:
        fields = {
            "title": self.title,
            "author": self.author,
            "howpublished": "KernelIndex",
            "year": str(self.published.year),
            "month": self.published.strftime("%b").lower(),
            "url": self.permalink,
            "note": f"Record digest {self.digest}. Accessed {self.accessed.isoformat()}",
        }
        body = ",\n".join(
            f"  {name} = {{{value if name == 'url' else _bibtex_escape(value)}}}" for name, value in fields.items()
        )
        return f"@misc{{{self.key},\n{body}\n}}"

    def csl(self) -> dict[str, object]:
        return {
            "id": self.key,
            "type": "dataset",
            "title": self.title,
            "author": [{"literal": self.author}],
            "publisher": "KernelIndex",
            "issued": {"date-parts": [[self.published.year, self.published.month, self.published.day]]},
            "accessed": {"date-parts": [[self.accessed.year, self.accessed.month, self.accessed.day]]},
            "URL": self.permalink,
            "note": f"Record digest {self.digest}",
        }

    def csl_json(self) -> str:
        return json.dumps([self.csl()], indent=2, ensure_ascii=False)

    def plain(self) -> str:
        return (
            f"{self.author}. {self.title}. KernelIndex, {self.published.isoformat()}. {self.permalink} "
            f"(record digest {self.digest}; accessed {self.accessed.isoformat()})."
        )


def _bibtex_escape(value: str) -> str:
    """Braces and the characters BibTeX treats specially, escaped; URLs stay readable."""
    for char in "\\{}":
        value = value.replace(char, "\\" + char)
    for char in "&%$#_":
        value = value.replace(char, "\\" + char)
    return value
