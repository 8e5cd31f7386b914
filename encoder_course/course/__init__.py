"""Old import path of the command line, kept for one release: an editable install made before the machinery moved
into rooms by job (``grading``, ``site``, ``notebook_tools``, ``quizzes``) still runs ``encoder-course`` through
``encoder_course.course.cli``. Nothing else lives here."""
