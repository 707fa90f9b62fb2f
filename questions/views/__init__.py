"""Thin views: read the request, call one service or selector, render a template or partial."""
