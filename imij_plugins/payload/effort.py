"""The writers' default effort (section 5 leaves effort levels to the writer): one value for the
encoders, ``EncodeOptions``, the codecs and the command line."""

DEFAULT_EFFORT = 5
