"""Thin views: read the request, call one service or selector, render a template or partial."""

from questions.numbers import whole_number

__all__ = ["whole_number"]
