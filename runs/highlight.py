"""A small source highlighter for kernels (Python, PyTorch, Triton; the C family: CUDA, C++) and for JSON.

It wraps comments, strings, numbers, keywords and decorators in spans on the
server, so code reads highlighted without JavaScript, and reads as plain text
where the stylesheet is missing. Everything else is escaped as it is.
"""

from __future__ import annotations

import re
from html import escape  # what django.utils.html.escape calls, without its wrappers: a manifest has ~1,000 tokens

from django.utils.safestring import SafeString, mark_safe

PYTHON_KEYWORDS = (  # noqa: SIM905 - a word list reads better as words
    "False None True and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield"
).split()
C_KEYWORDS = (  # noqa: SIM905
    "auto bool break case char const constexpr continue default do double else enum extern float for if inline "
    "int long namespace return short signed sizeof static struct switch template typedef typename unsigned using "
    "void volatile while __global__ __device__ __host__ __shared__ __restrict__ __syncthreads"
).split()


def _tokens(comment: str, keywords: list[str], extra: str = "") -> re.Pattern[str]:
    return re.compile(
        rf"(?P<comment>{comment})"
        r'|(?P<string>"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
        + extra
        + r"|(?P<number>\b\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\b)"
        + rf"|(?P<keyword>\b(?:{'|'.join(re.escape(word) for word in keywords)})\b)",
        re.MULTILINE,
    )


PYTHON = _tokens(r"#[^\n]*", PYTHON_KEYWORDS, r"|(?P<decorator>^[ \t]*@[\w.]+)")
C_FAMILY = _tokens(r"//[^\n]*|/\*[\s\S]*?\*/", C_KEYWORDS, r"|(?P<preprocessor>^[ \t]*#[^\n]*)")
LANGUAGES = {".py": PYTHON, ".cu": C_FAMILY, ".cuh": C_FAMILY, ".cpp": C_FAMILY, ".cc": C_FAMILY, ".h": C_FAMILY}
JSON_TOKENS = re.compile(
    r'(?P<key>"(?:[^"\\]|\\.)*"(?=\s*:))|(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)'
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)"
)


def language_of(path: str) -> str:
    """'kernel.cu' -> 'cu'; the highlighter to use for a file, '' where there is none."""
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path else ""
    return suffix[1:] if suffix in LANGUAGES else ""


def highlight(code: str, path: str) -> SafeString:
    """The code as HTML: escaped, with tokens of known languages wrapped in `<span class="s-kind">`."""
    pattern = LANGUAGES.get("." + language_of(path)) if language_of(path) else None
    if pattern is None:
        return mark_safe(escape(code))
    return _wrap_tokens(code, pattern, "s")


def highlight_json(text: str) -> SafeString:
    """Pretty JSON as HTML: escaped, with keys, strings, numbers and literals in `<span class="j-kind">`.

    The whole text is escaped first, then its tokens wrapped: a manifest has hundreds, and escaping each one
    apart took four fifths of the time. Escaping only &, < and > (element content needs no more) leaves the
    quotes the tokens are found by, and puts no digit or quote into the text, so every token is found as in
    the raw JSON and no span cuts an entity."""
    return mark_safe(JSON_TOKENS.sub(_json_span, escape(text, quote=False)))


def _json_span(match: re.Match[str]) -> str:
    return f'<span class="j-{match.lastgroup}">{match.group()}</span>'


def _wrap_tokens(text: str, pattern: re.Pattern[str], prefix: str) -> SafeString:
    pieces: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(escape(text[position : match.start()]))
        pieces.append(f'<span class="{prefix}-{match.lastgroup or "string"}">{escape(match.group())}</span>')
        position = match.end()
    pieces.append(escape(text[position:]))
    return mark_safe("".join(pieces))  # every piece above is escaped
