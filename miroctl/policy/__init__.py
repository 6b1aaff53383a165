"""Policy: whether a call may run (permission modes, blacklists, read-only and risk metadata, audit
reasons), which URLs it may touch (normalised URL rules), and how much of a result is kept."""
