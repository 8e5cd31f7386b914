"""The course website (``encoder-course site``): the notebooks as pages, their widgets and quizzes in plain HTML,
the course's links, and the static files (``files/``) the pages use. May import ``notebook_tools`` and
``quizzes``; nothing imports it but the command line.
"""
