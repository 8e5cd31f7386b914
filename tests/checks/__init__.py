"""The exercise checkers' tests: one catalogue per exercise, the shared machinery, the registry."""
