"""The semantic diff: per question and field."""

from questions.core import diff


def changes(before, after, qid="q"):
    d = diff.question_diff(qid, before, after)
    return d.status, [(c.label, c.kind) for c in d.changes]


def choice(criteria, instructions="Pick one"):
    return {"type": "choice", "instructions": instructions, "criteria": criteria}


def test_questions_added_removed_retyped_and_unchanged():
    before = {
        "a": choice({"x": "1", "y": "2"}),
        "b": {"type": "noul"},
        "c": {"type": "noul", "instructions": "Late?"},
    }
    after = {
        "a": choice({"x": "1", "y": "2"}),
        "c": {"type": "score", "criteria": ["lo", "hi"]},
        "d": {"type": "noul"},
    }
    result = diff.document_diff(before, after)
    assert [(q.id, q.status) for q in result.questions] == [
        ("a", "unchanged"),
        ("c", "retyped"),
        ("d", "added"),
        ("b", "removed"),
    ]
    assert result.summary == {"unchanged": 1, "retyped": 1, "added": 1, "removed": 1}


def test_options_added_removed_and_renamed():
    before = choice({"billing": "Payments", "tech": "Bugs", "sales": "Buying"})
    after = choice({"billing": "Payments", "technical": "Bugs", "other": "Anything else"})
    status, found = changes(before, after)
    assert status == "changed"
    assert ("option `tech`", "renamed") in found
    assert ("option `sales`", "removed") in found
    assert ("option `other`", "added") in found
    renamed = next(c for c in diff.question_diff("q", before, after).changes if c.kind == "renamed")
    assert renamed.segments == [("delete", "tech"), ("insert", "technical")]
    assert renamed.note == "same words, new name"


def test_option_text_changes_inline():
    d = diff.question_diff("q", choice({"a": "the cat sat"}), choice({"a": "the dog sat"}))
    [change] = d.changes
    assert change.segments == [
        ("equal", "the"),
        ("delete", " cat"),
        ("insert", " dog"),
        ("equal", " sat"),
    ]


def test_entry_shape_changes_show_the_words():
    d = diff.question_diff(
        "q", choice({"a": "words"}), choice({"a": {"what": "words", "examples": ["e"]}})
    )
    [change] = d.changes
    text_after = "".join(t for op, t in change.segments if op != "delete")
    assert text_after == "what: words\nexamples: e"


def test_options_reordered():
    status, found = changes(choice({"a": "1", "b": "2"}), choice({"b": "2", "a": "1"}))
    assert (status, found) == ("changed", [("options", "reordered")])


def test_levels_reordered_is_a_change_of_meaning():
    before = {"type": "score", "criteria": ["low", "mid", "high"]}
    after = {"type": "score", "criteria": ["high", "mid", "low"]}
    d = diff.question_diff("s", before, after)
    [change] = d.changes
    assert (change.label, change.kind) == ("levels", "reordered")
    assert change.segments == [("equal", "0 → 2, 2 → 0")]


def test_levels_changed_added_and_removed():
    before = {"type": "score", "criteria": ["low", "mid", "high"]}
    after = {"type": "score", "criteria": ["low", "medium", "high", "extreme"]}
    _, found = changes(before, after)
    assert found == [("level 1", "changed"), ("level 3", "added")]
    _, found = changes(after, before)
    assert found == [("level 1", "changed"), ("level 3", "removed")]


def test_instructions_and_noul_criteria_modes():
    absent = {"type": "noul"}
    null = {"type": "noul", "instructions": None, "criteria": None}
    _, found = changes(absent, null)
    assert found == [("instructions", "added"), ("criteria", "changed")]
    empty = {"type": "noul", "criteria": {}}
    described = {"type": "noul", "criteria": {"true": "yes it is"}}
    _, found = changes(empty, described)
    assert found == [("criteria", "changed"), ("the `true` case", "added")]


def test_structured_instructions_diff_as_json():
    before = {"type": "noul", "instructions": {"read": "`a`"}}
    after = {"type": "noul", "instructions": {"read": "`b`"}}
    [change] = diff.question_diff("n", before, after).changes
    assert ("delete", ' "`a`"\n}') in change.segments or any(
        op == "delete" and "`a`" in t for op, t in change.segments
    )


def test_question_order_change_is_noted():
    a = {"x": {"type": "noul"}, "y": {"type": "noul"}}
    b = {"y": {"type": "noul"}, "x": {"type": "noul"}}
    result = diff.document_diff(a, b)
    assert result.reordered and not result.changed


def test_a_structured_entry_changes_where_the_words_cannot_show_it():
    before = choice({"tech": {"what": "bugs", "owns": ["app"]}, "other": ["a", {"b": 1}]})
    after = choice({"tech": {"what": "bugs", "owns": ["app", "api"]}, "other": ["a", {"b": 2}]})
    status, found = changes(before, after)
    assert status == "changed"
    assert len(found) == 2, found  # both entries, though `what` did not change
    content = diff.question_content("q", after)
    assert dict(content.entries)["tech"] == '{"what": "bugs", "owns": ["app", "api"]}'
    structured = {"type": "noul", "instructions": {"read": "`state.x`"}}
    assert diff.question_content("n", structured).instructions == '{\n "read": "`state.x`"\n}'


def test_noul_cases_read_in_the_author_s_order():
    question = {"type": "noul", "criteria": {"false": "later", "true": "now"}}
    assert [case for case, _ in diff.question_content("n", question).entries] == ["false", "true"]


def test_a_structured_description_diffs_as_its_json_in_the_authors_order():
    before = {"type": "choice", "criteria": {"a": {"what": "w", "why": ["late", "lost"]}, "b": "x"}}
    after = {"type": "choice", "criteria": {"a": {"what": "w", "why": ["late"]}, "b": "x"}}
    [change] = diff.question_diff("c", before, after).changes
    old, new = diff.sides(change.segments)
    assert old == '{"what": "w", "why": ["late", "lost"]}'
    assert new == '{"what": "w", "why": ["late"]}'
