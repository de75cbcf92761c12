"""The projections chapter PRJ: the model, the state machine and the checks.
"""
