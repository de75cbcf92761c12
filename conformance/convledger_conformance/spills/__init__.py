"""The spills chapter SPL: the state machine and the checks.
"""
