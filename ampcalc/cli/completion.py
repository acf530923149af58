"""``ampcalc completion SHELL``: the shell-completion script (typer's completion).

``ampcalc --install-completion`` installs typer's script for the current shell; this
command prints the same script for any of bash, zsh, fish or PowerShell, for people who
keep their shell set-up in version control:

    eval "$(ampcalc completion bash)"      # in ~/.bashrc

Completion requests themselves arrive through the ``_AMPCALC_COMPLETE`` environment
variable; typer's completion classes are registered only when it is set, so normal
runs pay nothing for them.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from typer._completion_classes import completion_init
from typer._completion_shared import get_completion_script

from ampcalc.cli.app import ExitCode, app, emit

PROG = "ampcalc"
COMPLETE_VAR = "_AMPCALC_COMPLETE"
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")

if COMPLETE_VAR in os.environ:  # a completion request from the shell
    from typer._completion_classes import completion_init

    completion_init()


@app.command(rich_help_panel="Checks and reference")
def completion(
    shell: Annotated[
        str,
        typer.Argument(help="bash, zsh, fish, powershell or pwsh.", show_default=False),
    ],
) -> int:
    """Print the shell-completion script (bash: `eval "$(ampcalc completion bash)"`).

    Example:  ampcalc completion zsh > ~/.zfunc/_ampcalc
    """
    if shell not in SHELLS:
        raise typer.BadParameter(f"{shell!r}; expected one of {', '.join(SHELLS)}")

    completion_init()
    emit(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell) + "\n")
    return int(ExitCode.OK)
