"""Entropy-coded lossless DATA payloads (2, 2.1-2.7, 3, 4, 5).

Reading: ``decoder.prepare(header, head)`` once per payload, then ``EntropyPayload.decode_unit``
per unit record (units are independent, 2.3). Writing: ``encoder.encode_tuned``, imported only
when a file is written, so reads load none of the encoder's modules.
"""
