"""Measurements the notebooks present as results, each module named for what it measures.

``counting`` (parameters, 08), ``cost`` (FLOPs and memory, 09), ``timing`` (attention timed on CPU and GPU,
09), ``bench`` (the CPU benchmark against ``nn.TransformerEncoder``), ``gradient_flow`` (05, 07),
``head_maps`` (04), ``padding_drift`` (03), ``sequential_steps`` (02) and ``training`` (10). Nothing is
imported here: ``from encoder_course.measure import cost``.
"""
