"""What a session sends to the model: the context envelope with its patch ops applied, its wire
form, and ``convert_to_llm``.

Sits on ``storage``, ``settings`` and ``resources``.
"""
