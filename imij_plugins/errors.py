"""The typed errors of the spec's outcome classes (0.3): Corrupt, Unsupported and resource limits."""


class ImijError(ValueError):
    """Base of every error this package raises for an IMI or IMIJ-Set input."""


class Corrupt(ImijError):
    """The bytes break a rule of the spec (a closed field's unknown value, an overrun, a bad digest)."""


class Unsupported(ImijError):
    """Valid syntax that this implementation does not decode (an open field's unknown value, a feature)."""


class TooLarge(ImijError):
    """The input asks for more memory or work than the reader's limits allow."""
