"""Code extraction from a model reply: the last ```python block (or ```answer block), think-tags removed.

"No code found" is a normal outcome, returned as a reason the feedback turn can show the model, never an
exception.
"""
from __future__ import annotations

import re

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_UNCLOSED_THINK = re.compile(r"<think>.*\Z", re.S | re.I)
_BLOCK = re.compile(r"```[ \t]*(python|py|answer)?[ \t]*\n(.*?)```", re.S | re.I)


def strip_thinking(text: str) -> str:
    """Remove <think>...</think> sections (an unclosed one runs to the end of the text)."""
    text = _THINK.sub("", text)
    return _UNCLOSED_THINK.sub("", text)


def extract_code(text: str) -> tuple[str | None, str]:
    """(code, "") or (None, reason). Prefers the last block tagged python/py/answer; an untagged block
    counts when it defines ModelNew."""
    visible = strip_thinking(text or "")
    blocks = _BLOCK.findall(visible)
    tagged = [b for tag, b in blocks if tag]
    untagged = [b for tag, b in blocks if not tag and "ModelNew" in b]
    for cand in (tagged, untagged):
        if cand:
            code = cand[-1].strip("\n")
            if code.strip():
                return code + "\n", ""
    if "```" in visible:
        return None, "the reply has an unterminated or empty code block"
    if not visible.strip():
        return None, "the reply is empty (or only reasoning inside <think> tags)"
    return None, "no ```python code block found in the reply"
