"""The one place miroctl changes Typer's internals (tests/test_private_apis.py watches it).

Typer's bash completion script lets bash add a space after every unique completion, and its completion
protocol has no way to say "no space here". After a completed `key=` the user then has to delete that
space to type the value. miroctl's script is Typer's with one more step: when every completion ends in
`=`, it asks bash for no space (`compopt -o nospace`). Typer keeps the script in two places, both replaced:
the table `--install-completion`/`--show-completion` read (typer._completion_shared._completion_scripts) and
the class the `source_bash` instruction uses (typer._completion_classes.BashComplete.source_template).
The other shells keep Typer's scripts.
"""

from __future__ import annotations

from typer import _completion_classes, _completion_shared

BASH_SCRIPT = """
%(complete_func)s() {
    local IFS=$'\\n'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" \\
                   COMP_CWORD=$COMP_CWORD \\
                   %(autocomplete_var)s=complete_bash $1 ) )
    local reply
    for reply in "${COMPREPLY[@]}"; do
        [[ $reply == *= ]] || return 0
    done
    # key= completions only: the value follows without a space
    [[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null
    return 0
}

complete -o default -F %(complete_func)s %(prog_name)s
"""


def bash_without_space_after_equals() -> None:
    """Make Typer's bash completion script miroctl's (idempotent; a Typer that moved them keeps its own)."""
    scripts = getattr(_completion_shared, "_completion_scripts", None)
    if isinstance(scripts, dict):
        scripts["bash"] = BASH_SCRIPT
    bash = getattr(_completion_classes, "BashComplete", None)
    if bash is not None:
        bash.source_template = BASH_SCRIPT
