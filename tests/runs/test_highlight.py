"""The source highlighter: escaped always, tokens wrapped for the languages it knows, the text itself unchanged."""

from __future__ import annotations

import html
import json
import re

from hypothesis import given
from hypothesis import strategies as st

from runs.highlight import highlight, highlight_json, language_of

JSON_KINDS = ("key", "string", "number", "literal")

PYTHON = """import torch


@torch.jit.script
def run(x, eps: float = 1e-6):
    # the mean square, per row
    s = "a <b> & 'c'"
    return x * torch.rsqrt(x.pow(2).mean(-1) + eps)
"""
CUDA = """#include <cuda.h>
// one thread per element
__global__ void scale(float* x, int n) { /* in place */ if (threadIdx.x < n) x[threadIdx.x] *= 2.0f; }
"""


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def spans(markup: str, kind: str) -> list[str]:
    return [html.unescape(value) for value in re.findall(rf'<span class="s-{kind}">(.*?)</span>', markup, re.S)]


def test_python_tokens_are_wrapped_and_the_text_is_unchanged() -> None:
    markup = highlight(PYTHON, "kernel.py")
    assert text_of(markup) == PYTHON
    assert spans(markup, "comment") == ["# the mean square, per row"]
    assert spans(markup, "string") == ["\"a <b> & 'c'\""]
    assert spans(markup, "decorator") == ["@torch.jit.script"]
    assert {"import", "def", "return"} <= set(spans(markup, "keyword"))
    assert {"1e-6", "2", "1"} <= set(spans(markup, "number"))


def test_every_character_is_escaped() -> None:
    markup = highlight(PYTHON + "</code></pre><script>alert(1)</script>\n", "kernel.py")
    assert "<script>" not in markup
    assert "&lt;script&gt;" in markup
    assert "&lt;b&gt; &amp; " in markup


def test_cuda_sources_get_the_c_family_rules() -> None:
    markup = highlight(CUDA, "kernel.cu")
    assert text_of(markup) == CUDA
    assert spans(markup, "preprocessor") == ["#include <cuda.h>"]
    assert spans(markup, "comment") == ["// one thread per element", "/* in place */"]
    assert {"__global__", "void", "float", "int", "if"} <= set(spans(markup, "keyword"))


def test_an_unknown_language_is_plain_escaped_text() -> None:
    assert language_of("notes.txt") == ""
    assert language_of("Makefile") == ""
    assert highlight("a < b # not a comment", "notes.txt") == "a &lt; b # not a comment"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
def test_a_manifest_highlighted_reads_as_its_json_with_no_markup_of_its_own(value: object) -> None:
    """Any strings a manifest holds (a stranger wrote them) come out as text, the JSON unchanged, and the only
    elements are the highlighter's spans."""
    text = json.dumps({"spec": value, "</code></pre><script>": "<img src=x onerror=alert(1)> & \"'"}, indent=2)
    markup = highlight_json(text)
    assert text_of(markup) == text
    assert set(re.findall(r"<[^>]*>", markup)) <= {f'<span class="j-{kind}">' for kind in JSON_KINDS} | {"</span>"}


def test_json_tokens_are_wrapped_by_kind() -> None:
    markup = highlight_json(json.dumps({"latency_ns": 175.5, "ok": True, "name": "a<b", "none": None}))
    assert re.findall(r'<span class="j-(\w+)">', markup) == [
        "key",
        "number",
        "key",
        "literal",
        "key",
        "string",
        "key",
        "literal",
    ]
    assert '<span class="j-string">"a&lt;b"</span>' in markup
