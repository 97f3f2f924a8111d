"""Jinja2 templates of memplug's HTML report (package data, read with PackageLoader)."""
