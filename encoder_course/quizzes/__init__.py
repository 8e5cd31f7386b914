"""The quizzes that end each notebook: the questions, one module per notebook in ``bank/``, and their scoring
(``quiz``). May import the course map (``notebook_tools.manifest``); the widgets and the site show them.
"""
