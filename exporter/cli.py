"""The `otel-inputs` command: a thin click layer over the library objects."""

from __future__ import annotations

import importlib
import importlib.util

import click

# Each module defines click commands and a `COMMANDS` tuple; the group stays a thin index of them.
_COMMAND_MODULES = (
    "otel_inputs.exporter._collect_cli",
    "otel_inputs.viewer._cli",
    "otel_inputs.exporter._store_cli",
    "otel_inputs.exporter._setup_cli",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="otel-inputs")
def main() -> None:
    """Record, collect and review what task and inputs each AI-agent attempt actually had."""


def _register() -> None:
    for name in _COMMAND_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        for command in module.COMMANDS:
            main.add_command(command)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
