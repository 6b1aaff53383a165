"""Fake services on 127.0.0.1 that answer as the real APIs document."""
