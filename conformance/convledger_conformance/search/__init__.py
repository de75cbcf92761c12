"""The search chapter SRC: the model, the state machine and the checks.
"""
