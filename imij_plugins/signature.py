"""The 8-byte IMI signature (specification section 1), alone so that format checks import nothing else.

Pillow's accept check registers with this module at ``import PIL.Image`` (the autoload hook), where
importing the container parser would cost numpy and the codec.
"""

SIGNATURE = b"IMIJ\r\n\x87\n"  # 1: "IMIJ\r\n\x87\n"


def is_imi(prefix: bytes) -> bool:
    """Whether ``prefix`` starts with the 8-byte IMI signature."""
    return bytes(prefix[:8]) == SIGNATURE
