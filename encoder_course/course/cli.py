"""``encoder_course.course.cli:main``, the console script of installs made before the move: the command line is
:mod:`encoder_course.cli`."""

from ..cli import main

__all__ = ["main"]
