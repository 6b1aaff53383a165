"""Code shared by the bundled servers (results, settings, Markdown conversion, sandboxes, network probes);
none of these modules is a server."""
