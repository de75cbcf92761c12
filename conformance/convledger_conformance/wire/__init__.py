"""The wire chapter WIR: the client store that speaks the protocol to a server, and the checks.
"""
