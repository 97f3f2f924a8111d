"""Bring your own conversations: any memory benchmark as JSON lines, no plugin needed."""
