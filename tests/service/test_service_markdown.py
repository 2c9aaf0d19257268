"""A service session's stored text shows its Markdown, as a live reply does (pure, no service)."""

from __future__ import annotations

from nb_hitl.markdown import to_safe_html
from nb_hitl.service.transcript import transcript_entries


def test_stored_text_blocks_carry_their_sanitised_markdown() -> None:
    md = "Done:\n\n- `a.txt`\n- [log](https://example.org/log)\n\n<script>window.__pwned=1</script>"
    messages = [
        {
            "role": "assistant",
            "name": "writer",
            "id": "reply-1",
            "content": [{"type": "text", "id": "t1", "text": md}, {"type": "text", "id": "t2", "text": "Plain."}],
        }
    ]
    rich, plain = transcript_entries(messages)
    assert rich == {"kind": "text", "id": "t1", "text": md, "html": to_safe_html(md)}
    assert "<li><code>a.txt</code></li>" in rich["html"] and "<script" not in rich["html"]
    assert plain == {"kind": "text", "id": "t2", "text": "Plain."}
