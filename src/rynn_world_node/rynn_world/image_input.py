"""Turning whatever image the caller has into the model's HxWx3 uint8 RGB (or a clear error)."""

import cv2
import numpy as np


def to_model_rgb(image, height: int, width: int, name: str = "image") -> np.ndarray:
    """Grayscale / RGBA / other sizes are converted; other inputs raise ValueError."""
    image = np.asarray(image)
    if image.size == 0:
        raise ValueError(f"{name} is empty")
    if image.dtype != np.uint8:
        if np.issubdtype(image.dtype, np.floating) and np.isfinite(image).all() and 0.0 <= image.min() and image.max() <= 1.0:
            image = np.rint(image * 255.0).astype(np.uint8)
        else:
            raise ValueError(f"{name} must be uint8 or float in [0, 1], got {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    elif image.ndim == 3 and image.shape[2] == 4:
        image = image[..., :3]
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"{name} must be HxW, HxWx1, HxWx3 or HxWx4, got shape {image.shape}")
    if image.shape[:2] != (height, width):
        image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(image)
