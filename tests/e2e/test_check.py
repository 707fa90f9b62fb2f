"""In a real browser: sign in, then check a pasted document as you type (htmx)."""

import json

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_sign_in_and_check_a_document_while_typing(page, sign_in):
    url = sign_in()
    expect(page.get_by_role("heading", name="Question sets")).to_be_visible()
    page.goto(f"{url}/check/")
    box = page.get_by_label("Document (JSON)")
    one_option = {"q": {"type": "choice", "criteria": {"a": "first"}}}
    box.fill(json.dumps(one_option))
    result = page.locator("#validation-result")
    expect(result).to_contain_text("choice q has 1 option; at least 2 options")
    two_options = {"q": {"type": "choice", "criteria": {"a": "first", "other": "anything else"}}}
    box.fill(json.dumps(two_options))
    expect(result).to_contain_text("Valid")
    expect(result).not_to_contain_text("at least 2 options")


def test_signing_out(page, sign_in):
    sign_in()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
