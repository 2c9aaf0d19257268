"""The audit table a person reads (``AuditLogTable``'s rows): each call named by its tool and input,
AskUser answers as choices, an edit as the input it became; ids kept in the rows but not shown."""

from __future__ import annotations

from nb_hitl.widgets.audit import COLUMNS, audit_rows

ASK = {
    "questions": [
        {"question": "Which file?", "header": "File", "options": [{"label": "a.md", "description": ""}]},
        {"question": "Why?", "header": "Why", "options": [{"label": "old", "description": ""}]},
    ]
}


def test_ids_are_kept_but_not_shown() -> None:
    (row,) = audit_rows([{"tool_call_id": "call_1", "reply_id": "r1", "tool_name": "rm", "decision": "approve"}])
    assert "tool_call_id" not in COLUMNS and "reply_id" not in COLUMNS
    assert (row["tool_call_id"], row["reply_id"]) == ("call_1", "r1")


def test_answers_and_edits_read_as_words() -> None:
    rows = audit_rows(
        [
            {
                "event": "answered",
                "tool_name": "AskUser",
                "original_input": ASK,
                "decision": "answer",
                "answers": [
                    {"question": "Which file?", "selected": ["a.md"], "other": None},
                    {"question": "Why?", "selected": [], "other": "too big"},
                ],
                "decided_by": "ann",
            },
            {
                "event": "answered",
                "tool_name": "AskUser",
                "original_input": {"questions": ASK["questions"][:1]},
                "decision": "answer",
                "answers": [{"question": "Which file?", "selected": ["a.md"], "other": None}],
                "decided_by": "ann",
            },
            {
                "event": "answered",
                "tool_name": "write",
                "original_input": {"path": "a.md", "text": "hi"},
                "decision": "approve",
                "edited_input": {"path": "b.md", "text": "hi"},
                "decided_by": "bob",
            },
        ]
    )
    assert [(r["input"], r["detail"], r["who"]) for r in rows] == [
        ("Which file? (+1 more)", 'answers: "Which file?" -> a.md; "Why?" -> (Other) "too big"', "ann"),
        ("Which file?", "answers: a.md", "ann"),
        ('path="a.md", text="hi"', 'edited: path="b.md", text="hi"', "bob"),
    ]
