# Plain tracebacks under nbval and the tests (no ANSI colour codes).
c.InteractiveShell.colors = "nocolor"
