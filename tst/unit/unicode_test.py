"""The valid-Unicode rule: input with a lone surrogate is found by its path, output has it replaced."""

from __future__ import annotations

import json

from agent_env._unicode import invalid_text, valid_data, valid_json, valid_text


def test_the_first_string_that_is_not_valid_unicode_is_named_by_its_path_keys_included() -> None:
    assert invalid_text({"crate": "C1", "bays": [2, {"label": "B\ud800"}]}) == "bays.1.label"
    assert invalid_text({"crate": {"\udc00x": 1}}) == "crate.\ufffdx"
    assert invalid_text("C\udfff", "reply") == "reply"
    assert invalid_text({"crate": "Çrate-😀-\u202e", "bay": 2, "ok": None}) is None


def test_output_has_each_lone_surrogate_replaced_and_then_encodes_as_utf_8() -> None:
    data = valid_data({"k\ud800": ["a\udc80b", 3], "text": "fine"})

    assert data == {"k\ufffd": ["a\ufffdb", 3], "text": "fine"}
    assert valid_text("ok 😀") == "ok 😀"
    json.dumps(data, ensure_ascii=False).encode()


def test_json_escaping_a_lone_surrogate_or_not_utf_8_is_made_valid_and_valid_json_is_kept_as_it_is() -> None:
    valid = b'{"pair": "\\ud83d\\ude00", "text": "\\\\ud800", "plain": "\xc3\xa7"}'

    assert (
        valid_json(b'{"a": "x\\ud800y", "b": "\\uDC00\\uD800"}')
        == b'{"a": "x\\ufffdy", "b": "\\ufffd\\ufffd"}'
    )
    assert json.loads(valid_json(b'{"a": "\xed\xa0\x80!"}')) == {"a": "\ufffd\ufffd\ufffd!"}
    assert valid_json(valid) is valid
    assert json.loads(valid) == {"pair": "😀", "text": "\\ud800", "plain": "ç"}
