"""The Typer app: every command, under the root's boundary and global options (cli/root.py)."""

from __future__ import annotations

from miroctl.cli import auth, bench, check, config, daemon, install, prompt, read, replay, serve, topics
from miroctl.cli.helptext import WordedCommand, epilog
from miroctl.cli.root import add_simple, new_app

app = new_app()
add_simple(app, "list")
add_simple(app, "call")
app.command(cls=WordedCommand, epilog=epilog("read"))(read.read)
app.command(cls=WordedCommand, epilog=epilog("prompt"))(prompt.prompt)
app.command(cls=check.CheckCommand, epilog=epilog("check"))(check.check)
app.command(cls=WordedCommand, epilog=epilog("serve"))(serve.serve)
app.command(cls=WordedCommand, epilog=epilog("auth"))(auth.auth)
app.command("bench", cls=WordedCommand, epilog=epilog("bench"))(bench.bench_)
app.add_typer(config.app)
app.add_typer(daemon.app)
app.command(cls=WordedCommand, epilog=epilog("install"))(install.install)
app.command(cls=WordedCommand, epilog=epilog("replay"))(replay.replay)
app.command("help", cls=WordedCommand, epilog=epilog("help"))(topics.help_)
