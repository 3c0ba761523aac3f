"""The source highlighter: escaped always, tokens wrapped for the languages it knows, the text itself unchanged."""

from __future__ import annotations

import html
import re

from runs.highlight import highlight, language_of

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
