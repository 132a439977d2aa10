"""MediaPipe hand topology: 21 joints and the 20 bones that connect them.

Kept as plain constants so every consumer (renderer, retargeting, datasets) agrees on one index
order: 0 wrist, then thumb (1-4), index (5-8), middle (9-12), ring (13-16), pinky (17-20).
"""

import numpy as np

NUM_HAND_JOINTS = 21
WRIST = 0
LEFT, RIGHT = 0, 1

# (parent, child) pairs in MediaPipe's HAND_CONNECTIONS order minus the palm cross-links that
# duplicate a finger base; the palm is closed by the 5-9, 9-13, 13-17 links.
HAND_BONES = np.array(
    [
        (0, 1), (1, 2), (2, 3), (3, 4),
        (0, 5), (5, 6), (6, 7), (7, 8),
        (5, 9), (9, 10), (10, 11), (11, 12),
        (9, 13), (13, 14), (14, 15), (15, 16),
        (13, 17), (0, 17), (17, 18), (18, 19), (19, 20),
    ],
    dtype=np.int64,
)

# Forearm points per hand: index 0 elbow, index 1 wrist.
FOREARM_ELBOW, FOREARM_WRIST = 0, 1
