"""Fake services on 127.0.0.1 that answer as the real APIs document (Serper, MediaWiki, Wayback, Jina,
OpenAI, Anthropic, Gemini, the Docker Engine, E2B)."""
