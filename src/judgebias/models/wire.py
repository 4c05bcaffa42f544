"""What every provider's wire encoding shares: the MIME type of an image's bytes.

Each provider's encoding of a request has a module of its own (openai_wire, gemini_wire,
anthropic_wire), which its online backend and its batch module both import, so that
batch and online ask the same; none of them imports another, so what all three need
lies here, below them.
"""

from __future__ import annotations

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(image: bytes) -> str:
    """The MIME type of encoded image bytes, from their magic number.

    A data URL or inline part must name the format, and a wrong name is a silent decode
    failure in some loaders; an unknown format raises ValueError so the job fails
    visibly, before the request is sent.
    """
    for magic, mime in _MAGIC:
        if image.startswith(magic):
            return mime
    if image[:4] == b"RIFF" and image[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError(f"unknown image format (first bytes {image[:8]!r}); expected PNG or JPEG")
