"""The notebook tooling: the course map (``manifest``), the one way a notebook is read and written (``files``),
learner versions, executing notebooks and their time budgets, the self-check and the nbgrader release. May import
the exercise registry (``checks``); the site, the grader, the widgets and the command line build on it.
"""
