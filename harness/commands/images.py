"""`harness images build [GYM]`: the gyms' toolchain images for `--sandbox docker` (gyms/images.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from harness.console import console, err
from harness.options import WrappedHelp

images_app = typer.Typer(no_args_is_help=True, cls=WrappedHelp, rich_markup_mode=None,
                         help="Build the gyms' toolchain images for --sandbox docker.")  # fmt: skip


@images_app.command("build")
def images_build(
    gym: Annotated[Optional[str], typer.Argument(help="A gym that declares an image (default: every one that does).")] = None,
) -> None:
    """Build GYM's toolchain image (every declared one without GYM) unless an image of the same
    recipe exists: from the recipe's registry base when it can be pulled, else from the host's
    Debian mirror by debootstrap. Prints each image's tag, id, how it was made and the seconds."""
    from gyms import images

    names = [gym] if gym else images.gyms_with_images()
    if not names:
        raise ValueError("no installed gym declares a toolchain image (image.toml beside its class)")
    for name in names:
        built = images.build(name, say=lambda line: err.print(line, soft_wrap=True, highlight=False, markup=False))
        console.print(f"{name}: {built.tag} {built.id[:19]} ({built.how}, {built.seconds:.1f} s)", highlight=False)
