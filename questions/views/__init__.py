"""Thin views: read the request, call one service or selector, render a template or partial."""

from questions.core.numbers import whole_number  # the one reader of digits, for the views

__all__ = ["whole_number"]
