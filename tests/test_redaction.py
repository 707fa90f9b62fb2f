"""The built-ins and the walk of `core.redaction` on their own (pure): what the review of the
ingest path found kept, now taken out, and what is no personal data left as it was."""

import pytest

from questions.core import redaction

CARD, OTHER_CARD = "4111111111111111", "4012888888881881"


def _redacted(value):
    return redaction.redact(value, redaction.rules())


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"{CARD},{OTHER_CARD}", "[card],[card]"),
        (f"{CARD}, {OTHER_CARD}", "[card], [card]"),
        (f"{CARD}.{OTHER_CARD}", "[card].[card]"),
        (f"x.{CARD}", "x.[card]"),
        (f"cards:{CARD};{OTHER_CARD}", "cards:[card];[card]"),
    ],
)
def test_every_card_of_a_list_is_masked(text, masked):
    assert _redacted({"t": text}) == ({"t": masked}, True)


def test_a_decimal_fraction_is_no_card():
    value = {"t": f"ratio 3.{CARD} and 2,{OTHER_CARD}"}
    assert _redacted(value) == (value, False)


@pytest.mark.parametrize(
    "iban", ["GB82 WEST 1234 5698 7654 32", "gb82west12345698765432", "DE89 3704 0044 0532 0130 00"]
)
def test_an_iban_in_either_case_is_masked(iban):
    out, changed = _redacted({"t": f"pay to {iban} today"})
    assert changed and out["t"] == "pay to [iban] today"


def test_a_card_sent_as_a_number_with_a_zero_fraction_is_masked():
    out, changed = _redacted({"whole": int(CARD), "float": float(CARD), "price": 12.5})
    assert changed and out == {"whole": "[card]", "float": "[card]", "price": 12.5}


def test_keys_that_redact_alike_keep_every_value():
    out, changed = _redacted({"a@x.com": 1, "b@y.com": 2, "c@z.com": 3, "plain": 4})
    assert changed and out == {"[email]": 1, "[email] (2)": 2, "[email] (3)": 3, "plain": 4}


def test_a_bare_run_of_digits_is_no_phone_number():
    value = {"t": "order 5550109999 shipped"}
    assert _redacted(value) == (value, False)
